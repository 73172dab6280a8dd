// Writes the API server refuses, for the crash windows between an operator's
// action and its record of it: a ValidatingAdmissionPolicy on one of the
// project's subresources (say mysqlclusters/status) denies the matching writes
// of the objects carrying a label, as if the operator had stopped right before
// they landed. The operator sees each refusal as a failed request.
import { messageOf, resourceType, type KubeClient, type KubeObject } from "@stateward/core";
import { waitFor } from "./wait.ts";

const VAP = resourceType("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "validatingadmissionpolicies", false);
const VAP_BINDING = resourceType("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings", false);

export interface RefusedWritesPolicy {
  /** The policy's (and its binding's) name: unique per test run. */
  name: string;
  /** The resource of group stateward.io whose UPDATEs are checked, with its subresource: "databaseusers/status". */
  resource: string;
  /** CEL over `object` and `oldObject`: the write goes through when it holds ("false" refuses every one). */
  allowedWhen: string;
  /** The refusal's message, as the writer sees it in the API server's answer. */
  message: string;
  /** Only objects with this label are checked. */
  label: { key: string; value: string };
}

/**
 * Puts the policy in force and waits until it is: `probe` makes a write the policy refuses (on an object
 * no operator watches) until the refusal comes back. Returns what lifts it.
 */
export async function refuseWrites(client: KubeClient, policy: RefusedWritesPolicy, probe: () => Promise<unknown>): Promise<{ lift(): Promise<void> }> {
  const lift = async () => {
    await client.delete(VAP_BINDING, undefined, policy.name).catch(() => undefined);
    await client.delete(VAP, undefined, policy.name).catch(() => undefined);
  };
  await client.create<KubeObject>(VAP, {
    metadata: { name: policy.name },
    spec: {
      failurePolicy: "Fail",
      matchConstraints: { resourceRules: [{ apiGroups: ["stateward.io"], apiVersions: ["*"], operations: ["UPDATE"], resources: [policy.resource] }] },
      validations: [{ expression: policy.allowedWhen, message: policy.message }],
    },
  } as KubeObject);
  try {
    await client.create<KubeObject>(VAP_BINDING, {
      metadata: { name: policy.name },
      spec: { policyName: policy.name, validationActions: ["Deny"], matchResources: { objectSelector: { matchLabels: { [policy.label.key]: policy.label.value } } } },
    } as KubeObject);
    await waitFor(`the policy ${policy.name} refusing writes`, async () => {
      const outcome = await probe().then(
        () => "written",
        (err: unknown) => messageOf(err),
      );
      return outcome.includes(policy.message) ? true : undefined;
    }, 30_000, 300);
  } catch (err) {
    await lift();
    throw err;
  }
  return { lift };
}

/** CEL: the write leaves `status.<field>` as it was (absent before and after, or equal). */
export function statusFieldUnchanged(field: string): string {
  return `!has(object.status) || !has(object.status.${field}) || (has(oldObject.status) && has(oldObject.status.${field}) && object.status.${field} == oldObject.status.${field})`;
}
