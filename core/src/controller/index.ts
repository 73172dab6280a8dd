export { ControllerBuilder, isOneOf } from "./builder.ts";
export { Controller, ownKey, toOwner, type ControllerDeps, type ControllerOptions, type MapFunc } from "./controller.ts";
export { and, generationChanged, labelSelector, labelsOrAnnotationsChanged, labelsOrAnnotationsChangedExcept, matchesLabels, or, parseLabelSelector, type Predicate } from "./predicates.ts";
export { ReconcileError, TerminalError, isTerminal, requestKey, type ReconcileErrorOptions, type ReconcileContext, type Reconciler, type Request, type Result } from "./reconciler.ts";
