{{/* Name of every object of the release: the release name, unless it already carries the project name. */}}
{{- define "xcc-dns-management.fullname" -}}
{{- if contains "xcc-dns" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-xcc-dns" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "xcc-dns-management.labels" -}}
app.kubernetes.io/name: xcc-dns-management
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Labels that select the controller pods. */}}
{{- define "xcc-dns-management.selectorLabels" -}}
app.kubernetes.io/name: xcc-dns-management
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end -}}

{{/*
image renders repository:tag of the controller: the repository is
image.repository, else <image.registry>/xcc-syncer; the tag is image.tag,
else the chart's appVersion (the tag make push uses).
*/}}
{{- define "xcc-dns-management.image" -}}
{{- $repo := .Values.image.repository -}}
{{- if not $repo -}}
{{- $registry := required "image.registry is required: the registry and path make push REGISTRY=... pushed the images to, for example registry.example.com/xcc-dns (or set image.repository)" .Values.image.registry -}}
{{- $repo = printf "%s/xcc-syncer" $registry -}}
{{- end -}}
{{- printf "%s:%s" $repo (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The --name-grants flag of a nameGrants list: <ns>=<suffix>;... */}}
{{- define "xcc-dns.nameGrants" -}}
{{- $items := list -}}
{{- range . -}}{{- $items = append $items (printf "%s=%s" .namespace .suffix) -}}{{- end -}}
{{- join ";" $items -}}
{{- end -}}
