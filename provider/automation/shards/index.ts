// shards/: a stack held as shards. The directory of which shard holds each
// group (file and PostgreSQL) and its rule, whole-set runs over the shards, and
// runShard: the one pipeline of a shard's run (whole-set and fleet alike).
export { DEFAULT_SHARD_SIZE, ReservedStackNameError, ShardNameError, shardStackName } from "./directory";
export { eachShard, openShards } from "./each-shard";
export { recordUnlisted, ShardClaims } from "./directory-rule";
export { type OpenedShard, type PlannedRun, runPlanned, type ShardOf, type ShardRun, type ShardRunContext, type ShardRunOutcome, runShard } from "./run-shard";
export { eachLimited, mergeRunResults, shardConcurrency, ShardDirectoryConflictError, type ShardedStack } from "./sharded-stack";
