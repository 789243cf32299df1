// Object-store emulators for the tests (issue 42 item 4), each started by the
// project's own scripts: an S3 server (moto), Azurite, fake-gcs-server.
export { type ObjectStore } from "./server";
export { startS3 } from "./s3";
export { startAzurite } from "./azurite";
export { startGcs } from "./gcs";
export { conditionStripper } from "./condition-stripper";
