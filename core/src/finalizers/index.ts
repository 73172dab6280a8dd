export { addFinalizer, hasFinalizer, isBeingDeleted, removeFinalizer } from "./finalizers.ts";
