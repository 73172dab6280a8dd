export { findCondition, isConditionTrue, setCondition, type Condition, type ConditionStatus, type ConditionUpdate } from "./conditions.ts";
export { conditionsSchema } from "./schema.ts";
export { readyStatus, writeStatus, type StatusMutation, type WriteStatusOptions } from "./write-status.ts";
