// What the CLI talks to: its streams, a terminal or not, the environment.
export interface CliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** Standard input and output are a terminal: someone can confirm. */
  readonly isTty: boolean;
  /** Standard error is a terminal: progress may redraw in place. */
  readonly progressIsTty: boolean;
  /** Width of the terminal progress is drawn on. */
  readonly columns?: number;
  readonly confirm: (question: string) => Promise<boolean>;
  readonly env: NodeJS.ProcessEnv;
}
