export { ApiConnectionError, ApiError, isAlreadyExists, isConflict, isForbidden, isGone, isInvalid, isNotFound } from "./errors.ts";
export {
  KubeClient,
  type CallOptions,
  type DeleteOptions,
  type KubeClientOptions,
  type ListOptions,
  type PatchType,
  type RequestObservation,
  type Verb,
  type WatchEvent,
  type WatchOptions,
} from "./kube-client.ts";
export {
  deepFreeze,
  objectKey,
  splitKey,
  type KubeList,
  type KubeObject,
  type ListMeta,
  type ObjectMeta,
  type OwnerReference,
} from "./object.ts";
export { builtin, resourcePath, resourceType, type ResourceType } from "./resource.ts";
export { NameConflictError, applyIfChanged, checkControlled, controllerReference, isControlledBy, isSubset } from "./owned.ts";
export { kubeMicroTime, kubeTime } from "./time.ts";
export { compareQuantity, quantityValue } from "./quantity.ts";
