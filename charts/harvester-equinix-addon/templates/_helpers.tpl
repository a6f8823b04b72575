{{/* Chart name, overridable. */}}
{{- define "hea.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Name of every object. Harvester names the release after the Addon CR, which is
also the chart name, so the default is simply "harvester-equinix-addon".
*/}}
{{- define "hea.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "hea.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "hea.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "hea.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hea.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "hea.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "hea.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: harvester
{{- end -}}

{{- define "hea.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "hea.joinTokenSecret" -}}
{{- default .Values.secretName .Values.joinToken.secretName -}}
{{- end -}}

{{/* Where the host's rancherd config is mounted when joinToken.fromHost is on. */}}
{{- define "hea.rancherdConfigPath" -}}
/etc/rancher/rancherd/config.yaml
{{- end -}}

{{/* The iPXE NodePort the controller builds its default URL from, or nothing. */}}
{{- define "hea.ipxeNodePort" -}}
{{- if and (ne .Values.ipxe.service.type "ClusterIP") .Values.ipxe.service.nodePort -}}
{{- .Values.ipxe.service.nodePort -}}
{{- end -}}
{{- end -}}

{{/*
Container security context. The installer writes rancherd's config root:root
0600, so reading it from the host needs uid 0; capabilities stay dropped, so
that uid reads only files it owns.
*/}}
{{- define "hea.securityContext" -}}
{{- $sc := deepCopy .Values.securityContext -}}
{{- if .Values.joinToken.fromHost -}}
{{- $_ := set $sc "runAsUser" 0 -}}
{{- $_ := set $sc "runAsGroup" 0 -}}
{{- $_ := set $sc "runAsNonRoot" false -}}
{{- end -}}
{{- toYaml $sc -}}
{{- end -}}

{{/*
The controller's mode as given: equinix (the default) or seeder; hardware,
the seeder mode's former name, is passed on as it is, so that the controller
warns about it in its log.
*/}}
{{- define "hea.mode" -}}
{{- default "equinix" .Values.mode -}}
{{- end -}}

{{/* "true" in the seeder mode, under its name or its former one (hardware). */}}
{{- define "hea.seeder" -}}
{{- if has (include "hea.mode" .) (list "seeder" "hardware") -}}true{{- end -}}
{{- end -}}

{{/* "true" when the seeder mode runs the pools of servers you own. */}}
{{- define "hea.ownedPools" -}}
{{- if and (include "hea.seeder" .) .Values.ownedPools.enabled -}}true{{- end -}}
{{- end -}}

{{/* "true" when the controller serves iPXE: the Equinix scripts, or the boot endpoint of servers you own. */}}
{{- define "hea.servesIPXE" -}}
{{- if or (eq (include "hea.mode" .) "equinix") (include "hea.ownedPools" .) -}}true{{- end -}}
{{- end -}}

{{/*
The leader Lease. The seeder mode takes one of its own, so that an
installation of each mode never waits on the other's leader. Its name keeps
the mode's former name: a Lease renamed by an upgrade would let the old pod
and the new one lead at once, each with its own BMC sessions.
*/}}
{{- define "hea.leaderLockName" -}}
{{- if include "hea.seeder" . -}}
{{- printf "%s-hardware" (include "hea.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- include "hea.fullname" . -}}
{{- end -}}
{{- end -}}
