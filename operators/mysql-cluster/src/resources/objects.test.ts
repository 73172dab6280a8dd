import { describe, expect, it } from "vitest";
import type { MySQLCluster } from "../api.ts";
import { ordinalOf, podHost, primaryHost } from "./names.ts";
import { generatedSecret, primaryService, publishedInstance, readOnlyService, rootSecretRef, statefulSet } from "./objects.ts";

const cluster = (spec: Partial<MySQLCluster["spec"]> = {}): MySQLCluster =>
  ({ apiVersion: "stateward.io/v1alpha1", kind: "MySQLCluster", metadata: { name: "shop", namespace: "prod", uid: "u-1" }, spec: { replicas: 3, storage: { size: "10Gi" }, ...spec } });

describe("owned objects", () => {
  it("points the MySQLInstance at the primary Service with the root Secret", () => {
    const i = publishedInstance(cluster());
    expect(i.spec.host).toBe("shop-primary.prod.svc.cluster.local");
    expect(i.spec.adminSecretRef).toEqual({ name: "shop-root", usernameKey: "username", passwordKey: "password" });
    expect(i.metadata.ownerReferences?.[0]).toMatchObject({ kind: "MySQLCluster", uid: "u-1", controller: true });
    expect(rootSecretRef(cluster({ rootPasswordSecretRef: { name: "mine", key: "pw" } }))).toEqual({ name: "mine", key: "pw" });
  });

  it("selects the primary and the replicas by role", () => {
    expect((primaryService(cluster()) as unknown as { spec: { selector: Record<string, string> } }).spec.selector["stateward.io/role"]).toBe("primary");
    expect((readOnlyService(cluster()) as unknown as { spec: { selector: Record<string, string> } }).spec.selector["stateward.io/role"]).toBe("replica");
  });

  it("builds a StatefulSet the operator rolls itself, with the readiness gate and the claim template", () => {
    const sts = statefulSet(cluster({ image: "mysql:8.4", resources: { requests: { cpu: "500m" } } }), { flavor: "MySQL", replicas: 2, configHash: "abc" }) as unknown as {
      spec: { replicas: number; updateStrategy: { type: string }; template: { spec: { readinessGates: unknown[]; containers: { env: { name: string }[]; resources: unknown }[] } }; volumeClaimTemplates: { spec: { resources: { requests: { storage: string } } } }[] };
    };
    expect(sts.spec.replicas).toBe(2);
    expect(sts.spec.updateStrategy.type).toBe("OnDelete");
    expect(sts.spec.template.spec.readinessGates).toEqual([{ conditionType: "stateward.io/member-ready" }]);
    expect(sts.spec.template.spec.containers[0]?.env[0]?.name).toBe("MYSQL_ROOT_PASSWORD");
    expect(sts.spec.template.spec.containers[0]?.resources).toEqual({ requests: { cpu: "500m" } });
    expect(sts.spec.volumeClaimTemplates[0]?.spec.resources.requests.storage).toBe("10Gi");
    const kept = [{ metadata: { name: "data" }, spec: { resources: { requests: { storage: "5Gi" } } } }];
    expect((statefulSet(cluster(), { flavor: "MariaDB", replicas: 1, configHash: "x", liveClaimTemplates: kept }) as unknown as { spec: { volumeClaimTemplates: unknown } }).spec.volumeClaimTemplates).toBe(kept);
  });

  it("owns generated Secrets only when they go with the cluster", () => {
    expect(generatedSecret(cluster(), "shop-root", { password: "x" }).metadata.ownerReferences).toBeUndefined();
    expect(generatedSecret(cluster({ secretDeletionPolicy: "Delete" }), "shop-root", { password: "x" }).metadata.ownerReferences).toHaveLength(1);
  });

  it("names pods and reads ordinals back", () => {
    expect(podHost("shop", "prod", 2)).toBe("shop-2.shop-headless.prod.svc.cluster.local");
    expect(primaryHost("shop", "prod")).toBe("shop-primary.prod.svc.cluster.local");
    expect(ordinalOf("shop", "shop-12")).toBe(12);
    expect(ordinalOf("shop", "shop-01")).toBeUndefined();
    expect(ordinalOf("shop", "shopx-1")).toBeUndefined();
  });
});
