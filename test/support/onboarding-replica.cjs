// One replica of examples/onboarding-service as its own OS process (Node runs the
// example's TypeScript as it is). Configured by its environment: ONBOARDING_TOKEN,
// ONBOARDING_WORK_DIR, PULUMI_BACKEND_URL, USER_GROUPS_*. Prints
// "listening on URL" once up, then a line per sign-up; on SIGTERM drains (in-flight
// sign-ups finish, new ones get 503) and exits 0.
"use strict";
const { startOnboardingService } = require("../../examples/onboarding-service/service.ts");

startOnboardingService({
  workDir: process.env.ONBOARDING_WORK_DIR,
  backendUrl: process.env.PULUMI_BACKEND_URL,
  bearerToken: process.env.ONBOARDING_TOKEN ?? "",
  port: 0,
  log: (line) => process.stdout.write(`${line}\n`),
}).then(
  (service) => {
    process.stdout.write(`listening on ${service.url}\n`);
    process.once("SIGTERM", () => service.close().then(() => process.exit(0)));
  },
  (error) => {
    process.stderr.write(`onboarding replica failed to start: ${error && error.message}\n`);
    process.exit(1);
  },
);
