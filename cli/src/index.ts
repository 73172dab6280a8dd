// The `stateward` command lives in main.ts; this package exports the operator registry.
export { availableOperators, selectOperators } from "./operators.ts";
