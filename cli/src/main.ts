#!/usr/bin/env node
// The `stateward` command (commands.ts). This entry point first registers the
// module hook that keeps client-node's generated API client out of the process
// (slim-client-node.ts), which must happen before anything imports client-node,
// hence the dynamic import.
import { registerSlimClientNode } from "./slim-client-node.ts";

registerSlimClientNode();
await import("./commands.ts");
