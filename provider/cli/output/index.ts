// What the `user-groups` command prints, and nothing else: terminal-safe text
// (outside data never becomes a terminal escape), Markdown for a job summary
// (never Markdown syntax), the change lines, the progress printer and the tables.
// The command's files (../) use this folder through this file.
export * from "./change-lines";
export * from "./markdown-text";
export * from "./progress";
export * from "./summary";
export * from "./table";
export * from "./terminal-text";
