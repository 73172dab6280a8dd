// Builds the real node's images into the machine cache, once (see
// e2e/harness/realnode/images.ts). Needs root, mmdebstrap and busybox-static
// (hack/realnode-packages.sh installs them) and Go for the pause image.
//
// Usage: node hack/build-node-images.ts [pause|busybox|mariadb ...]   (default: all)
import { buildImages, imageNames } from "../e2e/harness/realnode/images.ts";

const names = process.argv.slice(2);
for (const n of names) if (!imageNames.includes(n)) throw new Error(`unknown image ${n}; known: ${imageNames.join(", ")}`);
await buildImages(names.length ? names : imageNames, (line) => console.error(`build-node-images: ${line}`));
