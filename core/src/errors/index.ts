// Turning caught values into messages.
export { messageOf } from "./message.ts";
