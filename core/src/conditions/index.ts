export { findCondition, isConditionTrue, setCondition, type Condition, type ConditionStatus, type ConditionUpdate } from "./conditions.ts";
export { conditionsSchema } from "./schema.ts";
export { writeStatus } from "./write-status.ts";
