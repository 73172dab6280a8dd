// The usage of `stateward release-finalizers`, apart from the command: showing it
// must not load every operator, which the command itself does.
export const releaseUsage = `Usage:
  stateward release-finalizers (--namespace NS | --all-namespaces) [--yes] [--kubeconfig PATH]

Lists every Stateward object with a Stateward finalizer and what that finalizer
would have cleaned up. Only for when the manager is gone: with the manager
running, delete objects normally and let it clean up.

  --namespace NS       objects in this namespace
  --all-namespaces     objects in every namespace
  --dry-run            only list (the default)
  --yes, --confirm     remove the finalizers; what they would have cleaned up is left behind
  --kubeconfig PATH    kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)

Exit status: 0 done (or nothing found); 1 some finalizers could not be removed (see
the messages; objects not listed as released keep theirs); 2 usage error; 4 the
Kubernetes API could not be reached or refused a list (nothing was removed).
`;
