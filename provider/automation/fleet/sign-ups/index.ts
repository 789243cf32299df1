// fleet/sign-ups/: the record-first sign-up (issue #44): a new group's ensure answered before its engine run.
export { adoptionPlan, createdEntryOf, type HeldShard, type SignUpRequest, type SignUpSeam, SignUps } from "./sign-ups";
export { engineSignUpSeam } from "./sign-up-lease";
export { peekRecord, recordedElsewhere } from "./recorded-elsewhere";
