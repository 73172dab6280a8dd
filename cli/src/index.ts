// The `stateward` command lives in main.ts; this package exports the operator registry, and the
// module hook that loads client-node's KubeConfig without its generated client (for a process
// that runs a manager itself, as the benchmarks do).
export { operatorNames, selectOperatorNames, selectOperators } from "./operators.ts";
export { registerSlimClientNode } from "./slim-client-node.ts";
