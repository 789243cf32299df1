// Scheduled rotation: the token rotates whenever `rotationTrigger` changes. Here it is
// the current month (or the `period` config, to rotate on demand), so a monthly
// scheduled `pulumi up` rotates the token once a month and is a no-op otherwise.
import * as pulumi from "@pulumi/pulumi";
import { UserGroup } from "pulumi-user-groups";

const config = new pulumi.Config();
const currentMonth = new Date().toISOString().slice(0, 7); // e.g. "2026-11"
const period = config.get("period") ?? currentMonth;

const reports = new UserGroup("reports", {
  name: "Reporting team",
  userGroupId: "reports",
  rotationTrigger: period,
});

export const rotationPeriod = period;
export const token = reports.token;
