{{/* Names, labels and the RBAC rules of each operator. */}}

{{- define "stateward.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's objects are called after the release, or "<release>-stateward" when the release name does not say stateward. */}}
{{- define "stateward.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
Name of RBAC objects outside the release namespace (ClusterRoles, and Roles in watched
namespaces): they carry the release namespace too, so that two releases (say, one per
--target, each in its own namespace) never claim the same object.
*/}}
{{- define "stateward.rbacName" -}}
{{- printf "%s:%s" .Release.Namespace (include "stateward.fullname" .) -}}
{{- end -}}

{{- define "stateward.selectorLabels" -}}
app.kubernetes.io/name: {{ include "stateward.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "stateward.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "stateward.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: manager
app.kubernetes.io/part-of: stateward
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* --secrets: the value, or by scope — "watch" in listed namespaces, "get" cluster-wide. */}}
{{- define "stateward.secretAccess" -}}
{{- if .Values.secretAccess -}}
{{- .Values.secretAccess -}}
{{- else if .Values.watchNamespaces -}}
watch
{{- else -}}
get
{{- end -}}
{{- end -}}

{{/* The verbs reading Secrets need: get alone when the manager only reads them by name. */}}
{{- define "stateward.secretReadVerbs" -}}
{{- if eq (include "stateward.secretAccess" .) "get" -}}
["get"]
{{- else -}}
["get", "list", "watch"]
{{- end -}}
{{- end -}}

{{- define "stateward.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/*
RBAC rules, one helper per operator, composed from values.operators so that rules an
enabled operator never uses are absent. Each helper yields a YAML list of PolicyRules for
the watched scope (the whole cluster or each watched namespace).
Every verb below is one a request of the operator uses (e2e/tests/chart/rbac.test.ts runs
the operators under these rules and fails on a 403 and on a grant no request used):
objects are read through the cache (list, watch), status is written with PUT on /status
(update), finalizers are added and removed with a merge patch of the object (patch).
/finalizers (update) is only granted where a controller sets blockOwnerDeletion on an object
it owns: the OwnerReferencesPermissionEnforcement admission plugin checks it.
*/}}

{{/* The core runtime: Events (events.k8s.io/v1) on the objects it reconciles, in their namespaces; a repeat patches the Event's series. */}}
{{- define "stateward.rules.core" -}}
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end -}}

{{/*
database-user: MySQLInstance and DatabaseUser, and the Secrets they reference (admin and user
passwords; with --secrets watch watched as metadata; each one read with get when its password
is needed). A
MySQLInstance is also read with get when a deleted DatabaseUser's instance is not in the cache.
patch on MySQLInstances and Secrets: the in-use finalizer (stateward.io/in-use-by-databaseusers)
on an instance and its admin and CA Secrets, which keeps them while accounts to drop on delete
need them (deleting the namespace drops the accounts instead of leaving them); nothing else of
a Secret is ever written.
*/}}
{{- define "stateward.rules.databaseUser" -}}
- apiGroups: ["stateward.io"]
  resources: ["mysqlinstances"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["stateward.io"]
  resources: ["databaseusers"]
  verbs: ["list", "watch", "patch"]
- apiGroups: ["stateward.io"]
  resources: ["mysqlinstances/status", "databaseusers/status"]
  verbs: ["update"]
- apiGroups: [""]
  resources: ["secrets"]
  verbs: {{ include "stateward.secretReadVerbs" . }}
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["patch"]
{{- end -}}

{{/*
mysql-backup: backups (a finalizer when deletionPolicy is Delete), restores (a finalizer while
one may run, to drop its staging databases), and schedules,
which create MySQLBackups (labelled, not owned: deleting a schedule keeps them; patch takes the
owner reference off one an earlier release made) and delete them for retention; binlog archives (their
status only); the MySQLInstances they
point at (and their status: every MySQL operator runs the MySQLInstance controller), and the
Secrets holding MySQL and S3 credentials. Backups, restores and binlog archives are re-read
with get before each status write (they run long after the reconcile that started them).
*/}}
{{- define "stateward.rules.mysqlBackup" -}}
- apiGroups: ["stateward.io"]
  resources: ["mysqlbackups"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["stateward.io"]
  resources: ["mysqlrestores"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["stateward.io"]
  resources: ["mysqlbackupschedules"]
  verbs: ["list", "watch"]
- apiGroups: ["stateward.io"]
  resources: ["mysqlbinlogarchives"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["stateward.io"]
  resources: ["mysqlbackups/status", "mysqlrestores/status", "mysqlbackupschedules/status", "mysqlbinlogarchives/status"]
  verbs: ["update"]
- apiGroups: ["stateward.io"]
  resources: ["mysqlinstances"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["stateward.io"]
  resources: ["mysqlinstances/status"]
  verbs: ["update"]
- apiGroups: [""]
  resources: ["secrets"]
  verbs: {{ include "stateward.secretReadVerbs" . }}
{{- end -}}

{{/*
mysql-cluster: MySQLCluster and everything it owns, server-side applied (StatefulSet, Services,
ConfigMap, PodDisruptionBudget, the MySQLInstance of its primary; garbage collection deletes
them) and the MySQLInstances' status (the MySQLInstance controller every MySQL operator runs), the root and replication Secrets it generates, the role label and readiness-gate
condition it keeps on the cluster's Pods, the Pods it deletes one at a time in a rollout, the
MySQLBackups it looks for (none may run during a rollout) or takes before one, and — when
storage.size grows — the PersistentVolumeClaims it expands and the StatefulSet it deletes
(pods orphaned) to recreate with the new claim template. An owned object missing from the
cache is read with get before it is applied: one of the same name made by someone else is
never taken over (NameConflict).
*/}}
{{- define "stateward.rules.mysqlCluster" -}}
- apiGroups: ["stateward.io"]
  resources: ["mysqlclusters"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["stateward.io"]
  resources: ["mysqlclusters/status"]
  verbs: ["update"]
- apiGroups: ["stateward.io"]
  resources: ["mysqlclusters/finalizers"]
  verbs: ["update"]
- apiGroups: ["apps"]
  resources: ["statefulsets"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["persistentvolumeclaims"]
  verbs: ["list", "patch"]
- apiGroups: [""]
  resources: ["services", "configmaps"]
  verbs: ["get", "list", "watch", "create", "patch"]
- apiGroups: ["policy"]
  resources: ["poddisruptionbudgets"]
  verbs: ["get", "list", "watch", "create", "patch"]
- apiGroups: ["stateward.io"]
  resources: ["mysqlinstances"]
  verbs: ["get", "list", "watch", "create", "patch"]
- apiGroups: ["stateward.io"]
  resources: ["mysqlinstances/status"]
  verbs: ["update"]
- apiGroups: [""]
  resources: ["secrets"]
  verbs: {{ include "stateward.secretReadVerbs" . }}
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["create", "patch"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "watch", "patch", "delete"]
- apiGroups: [""]
  resources: ["pods/status"]
  verbs: ["patch"]
- apiGroups: ["stateward.io"]
  resources: ["mysqlbackups"]
  verbs: ["list", "create"]
{{- end -}}

{{/* The rules of the watched scope: the core's plus those of every enabled operator. */}}
{{- define "stateward.rules" -}}
{{ include "stateward.rules.core" . }}
{{- if has "database-user" .Values.operators }}
{{ include "stateward.rules.databaseUser" . }}
{{- end }}
{{- if has "mysql-backup" .Values.operators }}
{{ include "stateward.rules.mysqlBackup" . }}
{{- end }}
{{- if has "mysql-cluster" .Values.operators }}
{{ include "stateward.rules.mysqlCluster" . }}
{{- end }}
{{- end -}}

{{/*
The manager's V8 old-space limit in MiB (--max-old-space-size): heapMaxMiB, or 5/8 of
resources.limits.memory in whatever unit it is written (512Mi, 1G, 0.5Gi, 536870912);
empty (Node's own default) without a limit. Node sizes its heap from the cgroup limit, but
to about half of it with a floor of 256 MiB (a 256Mi limit still gets a 259 MiB heap): the
heap can outgrow a small limit and the pod is OOM-killed instead of collecting garbage. The
other 3/8 is for what lives outside the old space: the young generation, code, Node itself
and Buffers (backup parts, zlib). See docs/performance.md.
*/}}
{{- define "stateward.heapMiB" -}}
{{- if .Values.heapMaxMiB -}}
{{- int .Values.heapMaxMiB -}}
{{- else -}}
{{- $limit := dig "limits" "memory" "" .Values.resources -}}
{{- if ne (toString $limit) "" -}}
{{- $mib := include "stateward.memoryMiB" $limit | float64 -}}
{{- if lt $mib 128.0 -}}
{{- fail (printf "resources.limits.memory %v is below the 128Mi the manager needs (it idles at about 80 MiB): raise it" $limit) -}}
{{- end -}}
{{- floor (mulf $mib 0.625) | int -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
A memory quantity in MiB, as Kubernetes reads it: a number (bytes; helm gives a bare number
in values.yaml as a float), optionally with an exponent (129e6) or a suffix, binary (Ki, Mi,
Gi, Ti, Pi, Ei) or decimal (k, M, G, T, P, E). Fails, naming heapMaxMiB, on anything else.
*/}}
{{- define "stateward.memoryMiB" -}}
{{- $q := . -}}
{{- if or (kindIs "float64" $q) (kindIs "int64" $q) (kindIs "int" $q) -}}
{{- divf (float64 $q) 1048576.0 -}}
{{- else -}}
{{- $s := toString $q -}}
{{- $number := regexFind "^\\+?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][+-]?[0-9]+)?" $s -}}
{{- $suffix := trimPrefix $number $s -}}
{{- $bytesPer := dict "" 1.0 "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "Pi" 1125899906842624.0 "Ei" 1152921504606846976.0 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "P" 1e15 "E" 1e18 -}}
{{- if or (eq $number "") (not (hasKey $bytesPer $suffix)) -}}
{{- fail (printf "cannot size the manager's heap from resources.limits.memory %q: write it as a number of bytes, with a suffix Ki, Mi, Gi, Ti, k, M, G or T, or set heapMaxMiB" $s) -}}
{{- end -}}
{{- divf (mulf (float64 $number) (get $bytesPer $suffix)) 1048576.0 -}}
{{- end -}}
{{- end -}}
