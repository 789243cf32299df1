// A tiny onboarding service: when a customer signs up, it provisions the
// customer's user group through pulumi-user-groups/automation and answers with
// the group's token for the app to store.
//
//   POST /customers   {"id": "acme", "name": "Acme Corp", "plan": "team"}
//   -> 201 {"userGroupId": "acme", "token": "...", "teamId": 7, "change": "create"}
//
// The stack's desired state is the whole customer list, so the service keeps it
// (customers.json beside the stack) and runs one provisioning at a time: a
// second concurrent run of the same stack would be refused (StackLockedError).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import * as path from "node:path";
import { provisionUserGroups } from "pulumi-user-groups/automation";

export interface Customer {
  id: string;
  name: string;
  plan?: string;
}

export interface OnboardingOptions {
  /** Holds the Pulumi stack settings, its file backend and customers.json. */
  workDir: string;
  stack?: string;
  port?: number;
  /** Passed to the engine and provider (credentials: USER_GROUPS_BASE_URL / USER_GROUPS_API_KEY). */
  envVars?: Record<string, string>;
}

export interface OnboardingService {
  url: string;
  close(): Promise<void>;
}

const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;

function readBody(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    let text = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => {
      text += chunk;
      if (text.length > 64 * 1024) req.destroy(new Error("body too large"));
    });
    req.on("end", () => {
      try {
        resolve(JSON.parse(text));
      } catch {
        reject(new Error("the body must be JSON"));
      }
    });
    req.on("error", reject);
  });
}

export async function startOnboardingService(options: OnboardingOptions): Promise<OnboardingService> {
  mkdirSync(options.workDir, { recursive: true });
  const listFile = path.join(options.workDir, "customers.json");
  const customers: Customer[] = existsSync(listFile) ? (JSON.parse(readFileSync(listFile, "utf8")) as Customer[]) : [];
  // One provisioning at a time: each run declares the whole list.
  let queue: Promise<unknown> = Promise.resolve();

  async function onboard(customer: Customer) {
    if (!customers.some((c) => c.id === customer.id)) customers.push(customer);
    const result = await provisionUserGroups({
      stack: options.stack ?? "customers",
      workDir: options.workDir,
      envVars: options.envVars,
      groups: customers.map((c) => ({ name: c.name, userGroupId: c.id, properties: { plan: c.plan ?? "trial" } })),
    });
    writeFileSync(listFile, `${JSON.stringify(customers, null, 2)}\n`);
    const group = result.groups.find((g) => g.userGroupId === customer.id);
    if (!group?.token) throw new Error(`no token came back for ${customer.id}`);
    return { userGroupId: customer.id, token: group.token, teamId: group.teamId, change: group.change };
  }

  const server: Server = createServer((req, res) => {
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (req.method !== "POST" || req.url !== "/customers") return reply(404, { error: "POST /customers only" });
    readBody(req)
      .then((body) => {
        const { id, name, plan } = (body ?? {}) as Partial<Customer>;
        if (typeof id !== "string" || !ID.test(id) || typeof name !== "string" || name.trim() === "") {
          return reply(400, { error: "id (letters, digits, . _ -) and name are required" });
        }
        const run = queue.then(() => onboard({ id, name, ...(typeof plan === "string" ? { plan } : {}) }));
        queue = run.catch(() => undefined);
        return run.then(
          (result) => reply(result.change === "create" ? 201 : 200, result),
          (error: unknown) => reply(502, { error: error instanceof Error ? error.message.split("\n")[0] : String(error) }),
        );
      })
      .catch((error: unknown) => reply(400, { error: String(error instanceof Error ? error.message : error) }));
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

if (require.main === module) {
  startOnboardingService({ workDir: path.resolve(".onboarding"), port: Number(process.env.PORT ?? 3000) }).then((service) =>
    console.log(`onboarding service listening on ${service.url}`),
  );
}
