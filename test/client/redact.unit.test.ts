// Secret scrubbing, in its one home (provider/client/redact.ts): the client's
// Redactor for what it logs and throws, scrubText and scrubSecrets for every error
// the automation layer throws, with the values a run keeps secret (secretValuesOf,
// automation/engine/stack-config.ts). Each case is the leak itself.
import { describe, expect, it } from "vitest";
import { REDACTED, Redactor, scrubSecrets, scrubText } from "../../provider/client/redact";

const KEY = "k3y-of-nine";
const TOKEN = "ab".repeat(32); // shaped like an issued token: 64 hex

describe("the Redactor (the client's log lines and errors)", () => {
  it("replaces every secret it was told of, whatever its length, and anything token-shaped it never saw", () => {
    const redactor = new Redactor();
    redactor.add(KEY);
    redactor.add(undefined);
    redactor.add("");
    expect(redactor.text(`GET /groups with ${KEY} twice ${KEY}; token ${TOKEN}`)).toBe(`GET /groups with ${REDACTED} twice ${REDACTED}; token ${REDACTED}`);
    // 64 hex inside a longer word is not a token: left as it is.
    expect(redactor.text(`x${TOKEN}x`)).toBe(`x${TOKEN}x`);
    expect(redactor.text("nothing secret")).toBe("nothing secret");
  });

  it("blanks secret fields of a JSON body at any depth, and known secrets in every other string", () => {
    const redactor = new Redactor();
    redactor.add(KEY);
    const body = { user_group: { token: "t-1", name: `named ${KEY}`, nested: [{ current_token: "t-0" }, { apiKey: null }] }, authorization: "Bearer x", count: 3 };
    expect(redactor.value(body)).toEqual({
      user_group: { token: REDACTED, name: `named ${REDACTED}`, nested: [{ current_token: REDACTED }, { apiKey: null }] },
      authorization: REDACTED,
      count: 3,
    });
    // A copy: the body the caller holds keeps its values.
    expect(body.user_group.token).toBe("t-1");
  });
});

describe("scrubText and scrubSecrets (every error the automation layer throws)", () => {
  it("scrubText: each secret, and token shapes", () => {
    expect(scrubText(`passphrase=hunter22 key=${KEY} ${TOKEN}`, ["hunter22", KEY])).toBe(`passphrase=${REDACTED} key=${REDACTED} ${REDACTED}`);
    expect(scrubText("nothing here", [])).toBe("nothing here");
  });

  it("scrubSecrets keeps the error (class, identity) and scrubs message, stack, cause chain, lines and a CommandError's captured output", () => {
    class EngineFailure extends Error {
      readonly commandResult = { stdout: `out ${KEY}`, stderr: `err ${KEY}`, err: new Error(`spawn ${KEY}`) };
      readonly diagnostics = [`line ${KEY}`, new Error(`inner ${KEY}`)];
      readonly options = { passphrase: KEY }; // an object the caller may still use: never touched
    }
    const cause = new Error(`cause ${KEY}`, { cause: new Error(`root ${KEY}`) });
    const error = new EngineFailure(`failed with ${KEY}`, { cause });
    const scrubbed = scrubSecrets(error, [KEY]);
    expect(scrubbed).toBe(error);
    expect(scrubbed).toBeInstanceOf(EngineFailure);
    const seen = JSON.stringify({
      message: error.message,
      stack: error.stack,
      cause: [cause.message, cause.stack, (cause.cause as Error).message],
      commandResult: [error.commandResult.stdout, error.commandResult.stderr, error.commandResult.err.message],
      diagnostics: [error.diagnostics[0], (error.diagnostics[1] as Error).message],
    });
    expect(seen).not.toContain(KEY);
    expect(seen).toContain(REDACTED);
    expect(error.options.passphrase).toBe(KEY);
  });

  it("scrubSecrets: a thrown non-error becomes an Error with its text scrubbed; cycles, frozen lists and throwing getters are survived", () => {
    const fromString = scrubSecrets(`plain ${KEY}`, [KEY]) as Error;
    expect(fromString).toBeInstanceOf(Error);
    expect(fromString.message).toBe(`plain ${REDACTED}`);

    const cyclic = new Error(`a ${KEY}`) as Error & { self?: unknown; frozen?: readonly string[] };
    cyclic.cause = cyclic;
    cyclic.frozen = Object.freeze([`frozen ${KEY}`]);
    Object.defineProperty(cyclic, "loud", { enumerable: true, get: () => { throw new Error("no"); } });
    expect(() => scrubSecrets(cyclic, [KEY])).not.toThrow();
    expect(cyclic.message).toBe(`a ${REDACTED}`);

    // Deeper than any real error's chain: scrubbed down to the bound, no further (and no stack overflow).
    let deep = new Error(`level 0 ${KEY}`);
    const top = deep;
    for (let level = 1; level <= 20; level++) {
      const next = new Error(`level ${level} ${KEY}`);
      deep.cause = next;
      deep = next;
    }
    scrubSecrets(top, [KEY]);
    expect(top.message).toBe(`level 0 ${REDACTED}`);
    expect((top.cause as Error).message).toBe(`level 1 ${REDACTED}`);
  });
});
