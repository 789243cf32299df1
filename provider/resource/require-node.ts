// Imported first by the dynamic provider's module (runtime.ts): Pulumi's
// dynamic-provider process runs on whichever `node` is first on PATH. On an
// older one, loading the provider fails here, naming the version and the fix,
// so that the first check of each group says so (before any request) instead
// of every create failing later with "Cannot read properties of undefined
// (reading 'bind')" from undici.
import { assertNodeVersion } from "../node-version";

assertNodeVersion("The UserGroup dynamic provider (pulumi-user-groups)");
