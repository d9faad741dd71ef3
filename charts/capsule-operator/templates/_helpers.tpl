{{- define "capsule-operator.name" -}}capsule-operator{{- end -}}

{{- define "capsule-operator.fullname" -}}
{{- if contains "capsule-operator" .Release.Name -}}{{ .Release.Name | trunc 63 | trimSuffix "-" }}{{- else -}}{{ printf "%s-capsule-operator" .Release.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "capsule-operator.labels" -}}
app.kubernetes.io/name: capsule-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "capsule-operator.selectorLabels" -}}
app.kubernetes.io/name: capsule-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "capsule-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}{{ default (include "capsule-operator.fullname" .) .Values.serviceAccount.name }}{{- else -}}{{ default "default" .Values.serviceAccount.name }}{{- end -}}
{{- end -}}

{{- define "capsule-operator.rules" -}}
- apiGroups: ["murmur.io"]
  resources: ["capsules", "hooks"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["murmur.io"]
  resources: ["capsules/status", "hooks/status"]
  verbs: ["get", "patch", "update"]
- apiGroups: ["murmur.io"]
  resources: ["capsules/finalizers"]
  verbs: ["update"]
# Names, versions and keys of Secrets (the API key Secret's version rolls the pods; values are dropped on read).
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["configmaps", "services", "serviceaccounts"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# A Capsule of more than one replica gets a PodDisruptionBudget (pruned when it scales back to one).
- apiGroups: ["policy"]
  resources: ["poddisruptionbudgets"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# Events: its own (create, patch); the activator's WakeRequested Events on Capsules (list, watch).
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch", "list", "watch"]
# A sleep-enabled Capsule's EndpointSlice <capsule>-activator (the activator's pods as endpoints of
# its Service while it sleeps), and the PersistentVolumeClaim <capsule>-store of an embedded store
# on a volumeClaim (what lets it sleep without losing its tasks).
- apiGroups: ["discovery.k8s.io"]
  resources: ["endpointslices"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: [""]
  resources: ["persistentvolumeclaims"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# Token usage: the scraper lists capsule pods (for their IPs and readiness) on its interval; the
# controller watches them so a runtime that exits at start shows in the Capsule's status.
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "watch"]
{{- end -}}

{{- /* A label map as k=v,k2=v2 (sorted keys), for an env var. */ -}}
{{- /* The activator of sleeping Capsules (activator.enabled): its Service and its pods' labels. */ -}}
{{- define "capsule-operator.activatorName" -}}{{ printf "%s-activator" .Release.Name | trunc 63 | trimSuffix "-" }}{{- end -}}

{{- /* The Secret holding the activator key (templates/activator-key.yaml); a Secret name may be 253 long. */ -}}
{{- define "capsule-operator.activatorKeyName" -}}{{ printf "%s-activator-key" .Release.Name }}{{- end -}}

{{- /* Both Deployments read the activator key from a file of the Secret's volume (operator/activator/key.ts): the env entry naming it, the mount, the volume. */ -}}
{{- define "capsule-operator.activatorKeyEnv" -}}
- { name: CAPSULE_ACTIVATOR_KEY_FILE, value: /var/run/secrets/capsule-operator/activator-key/key }
{{- end -}}
{{- define "capsule-operator.activatorKeyMount" -}}
- { name: activator-key, mountPath: /var/run/secrets/capsule-operator/activator-key, readOnly: true }
{{- end -}}
{{- define "capsule-operator.activatorKeyVolume" -}}
- name: activator-key
  secret: { secretName: {{ include "capsule-operator.activatorKeyName" . }}, defaultMode: 288 } # 0440, written in decimal: YAML 1.1 and 1.2 read 0440 differently
{{- end -}}

{{- define "capsule-operator.activatorSelectorLabels" -}}
app.kubernetes.io/name: capsule-activator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- /* What the activator may do in a watched namespace (activator-rbac.yaml). */ -}}
{{- define "capsule-operator.activatorNamespacedRules" -}}
- apiGroups: ["murmur.io"]
  resources: ["capsules"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["list", "watch"]
- apiGroups: ["discovery.k8s.io"]
  resources: ["endpointslices"]
  verbs: ["list", "watch"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
{{- end -}}

{{- define "capsule-operator.labelPairs" -}}
{{- $pairs := list -}}
{{- range $k := keys . | sortAlpha -}}
{{- $pairs = append $pairs (printf "%s=%s" $k (index $ $k)) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end -}}

{{- /* The API server's endpoints as cidr:port,... (network.apiServer, else the kubernetes EndpointSlice). */ -}}
{{- define "capsule-operator.apiServerEgress" -}}
{{- $out := list -}}
{{- range .Values.network.apiServer -}}{{- $out = append $out (printf "%s:%v" .cidr .port) -}}{{- end -}}
{{- if not $out -}}
{{- $slice := lookup "discovery.k8s.io/v1" "EndpointSlice" "default" "kubernetes" -}}
{{- if $slice -}}
{{- range $ep := ($slice.endpoints | default list) -}}
{{- range $ip := ($ep.addresses | default list) -}}
{{- range $p := ($slice.ports | default list) -}}
{{- $out = append $out (printf "%s/%s:%v" $ip (ternary "128" "32" (contains ":" $ip)) $p.port) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- join "," $out -}}
{{- end -}}

{{- /* The pod ranges the activator reaches capsule pods in by address (comma-separated; empty: none):
activator.podCIDRs, else the Nodes' pod CIDRs at install/upgrade (lookup: none with `helm
template`), not past 64 Nodes (the list would grow with the cluster: give the cluster CIDR then). */ -}}
{{- define "capsule-operator.activatorPodCIDRs" -}}
{{- $out := list -}}
{{- if .Values.activator.podAddressEgress -}}
{{- $out = .Values.activator.podCIDRs | default list -}}
{{- if not $out -}}
{{- $items := (lookup "v1" "Node" "" "").items | default list -}}
{{- if le (len $items) 64 -}}
{{- range $n := $items -}}
{{- range $c := ($n.spec.podCIDRs | default list) -}}{{- $out = append $out $c -}}{{- end -}}
{{- if and $n.spec.podCIDR (not $n.spec.podCIDRs) -}}{{- $out = append $out $n.spec.podCIDR -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- join "," ($out | uniq | sortAlpha) -}}
{{- end -}}
