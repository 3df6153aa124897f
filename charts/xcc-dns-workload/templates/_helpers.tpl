{{/* Name of every object of the release: the release name, unless it already carries the chart role. */}}
{{- define "xcc-dns-workload.fullname" -}}
{{- if contains "xcc-dns" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-xcc-dns" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "xcc-dns-workload.labels" -}}
app.kubernetes.io/name: xcc-dns-workload
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Labels that select the DNS pod. */}}
{{- define "xcc-dns-workload.selectorLabels" -}}
app.kubernetes.io/name: xcc-dns-workload
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: dns
{{- end -}}

{{/*
image renders repository:tag of the syncer or coredns image: the repository
is <what>.image.repository, else <image.registry>/<image name>; the tag is
<what>.image.tag, else image.tag, else the chart's appVersion (the tag
make push uses).
*/}}
{{- define "xcc-dns-workload.image" -}}
{{- $img := index . 0 -}}{{- $what := index . 1 -}}{{- $root := index . 2 -}}
{{- $name := get (dict "syncer" "xcc-syncer" "coredns" "coredns") $what -}}
{{- $repo := $img.repository -}}
{{- if not $repo -}}
{{- $registry := required (printf "image.registry is required: the registry and path make push REGISTRY=... pushed the images to, for example registry.example.com/xcc-dns (or set %s.image.repository)" $what) $root.Values.image.registry -}}
{{- $repo = printf "%s/%s" $registry $name -}}
{{- end -}}
{{- printf "%s:%s" $repo (default $root.Chart.AppVersion (default $root.Values.image.tag $img.tag)) -}}
{{- end -}}

{{/*
The top-level Corefile: files/Corefile (or the corefile value), then
extraServerBlocks. Both import the guard file the pod's init container
writes (`xcc-syncer corefile`): the zone, grants, reverse CIDRs and the
clusterset zone are generated there, never spliced in here.
*/}}
{{- define "xcc-dns-workload.corefile" -}}
{{- $corefile := default (.Files.Get "files/Corefile") .Values.corefile -}}
{{- if not (and (contains "{$XCC_GUARD}" $corefile) (contains "import xcc-zone" $corefile)) -}}
{{- fail "corefile must `import {$XCC_GUARD}` (the guard file: the zone's rewrites and templates, the reverse zones) and `import xcc-zone` in the zone's server block: without them any query could read the whole zone from etcd (see files/Corefile)" -}}
{{- end -}}
{{- $corefile -}}
{{- with .Values.extraServerBlocks }}
{{ printf "\n# extraServerBlocks\n%s" . }}
{{- end -}}
{{- end -}}

{{/* The flags that say what the zone holds, the same for serve and for
the init container that writes the guard from them. */}}
{{- define "xcc-dns-workload.zoneArgs" -}}
- --domain={{ .Values.domain }}
{{- with .Values.reverseCIDRs }}
- --reverse-cidrs={{ join "," . }}
{{- end }}
{{- with .Values.nameGrants }}
- --name-grants={{ include "xcc-dns.nameGrants" . }}
{{- end }}
- --clusterset-zone={{ .Values.mcs.dnsZone }}
- --clusterset-server={{ include "xcc-dns-workload.clusterSetServer" . }}
{{- end -}}

{{/* mcs.dnsServer, checked: coredns answers mcs.dnsZone, so needs one. */}}
{{- define "xcc-dns-workload.clusterSetServer" -}}
{{- if and (eq .Values.mcs.dnsServer "coredns") (not .Values.mcs.dnsZone) -}}
{{- fail "mcs.dnsServer coredns needs mcs.dnsZone: the cluster DNS's kubernetes plugin answers that zone" -}}
{{- end -}}
{{- .Values.mcs.dnsServer -}}
{{- end -}}

{{/* Container security context: restricted Pod Security Standard. */}}
{{- define "xcc-dns-workload.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Pod security context: a fixed non-root user, so images without USER run too. */}}
{{- define "xcc-dns-workload.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/*
loopbackURL renders an etcd URL value after refusing any host but loopback.
The embedded etcd has no authentication and the chart no TLS for it: on
the pod IP anyone in the cluster could write records (client URL) or join
as a member (peer URL).
*/}}
{{- define "xcc-dns-workload.loopbackURL" -}}
{{- $value := index . 0 -}}{{- $url := index . 1 -}}
{{- $host := (urlParse $url).hostname -}}
{{- if not (or (eq $host "localhost" "::1") (regexMatch "^127\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}$" $host)) -}}
{{- fail (printf "%s %q is not on loopback (127.0.0.0/8, [::1], localhost): the embedded etcd has no authentication and this chart offers no TLS for it, so on any other address every pod that reaches it could write DNS records (client URL) or join it as a member (peer URL)" $value $url) -}}
{{- end -}}
{{- $url -}}
{{- end -}}

{{/* labelList renders a label map as k=v,k=v in key order. */}}
{{- define "xcc-dns-workload.labelList" -}}
{{- $out := list -}}
{{- range $k, $v := . }}{{ $out = append $out (printf "%s=%s" $k $v) }}{{ end -}}
{{- join "," $out -}}
{{- end -}}

{{/* The --name-grants flag of a nameGrants list: <ns>=<suffix>;... */}}
{{- define "xcc-dns.nameGrants" -}}
{{- $items := list -}}
{{- range . -}}{{- $items = append $items (printf "%s=%s" .namespace .suffix) -}}{{- end -}}
{{- join ";" $items -}}
{{- end -}}
