// The `stateward` command lives in main.ts; this package exports the operator registry.
export { operatorNames, selectOperatorNames, selectOperators } from "./operators.ts";
