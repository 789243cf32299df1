// shards/: a stack held as shards. The directory of which shard holds each
// group (file and PostgreSQL), and whole-set runs over the shards.
export { DEFAULT_SHARD_SIZE, ReservedStackNameError, ShardNameError, shardStackName } from "./directory";
export { directoryHooks, eachShard, openShards } from "./each-shard";
export { eachLimited, mergeRunResults, shardConcurrency, ShardDirectoryConflictError, type ShardedStack } from "./sharded-stack";
