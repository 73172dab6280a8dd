export { EventRecorder, type EventRecorderOptions, type EventType } from "./recorder.ts";
