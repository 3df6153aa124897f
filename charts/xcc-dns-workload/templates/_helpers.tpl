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

{{/* The Corefile: the value, else the shipped copy of cmd/coredns/Corefile (which serves xcc.test)
and, for reverseCIDRs, a server block of those CIDRs importing its xcc-reverse snippet. */}}
{{- define "xcc-dns-workload.corefile" -}}
{{- if .Values.corefile -}}
{{- .Values.corefile -}}
{{- else -}}
{{- if ne .Values.domain "xcc.test" -}}
{{- fail "domain is not xcc.test: the shipped Corefile serves xcc.test, so give a Corefile for your zone in the corefile value" -}}
{{- end -}}
{{- $corefile := .Files.Get "files/Corefile" -}}
{{- with .Values.nameGrants -}}
{{- $names := list -}}
{{- range . -}}
{{- $labels := splitList "." (trimSuffix (printf ".%s" $.Values.domain) .suffix) -}}
{{- range $i, $_ := $labels -}}
{{- $names = append $names (join "\\." (slice $labels $i)) -}}
{{- end -}}
{{- end -}}
{{- $block := printf "    # Operator name grants (nameGrants): each suffix and the names\n    # between it and the zone are empty non-terminals (NODATA); the etcd\n    # plugin would answer them with every granted name below them.\n    template ANY ANY xcc.test {\n        match ^(%s)\\.xcc\\.test\\.$\n        rcode NOERROR\n        authority \"xcc.test. 5 IN SOA ns.dns.xcc.test. hostmaster.xcc.test. 1 7200 1800 86400 5\"\n        fallthrough\n    }\n\n    etcd xcc.test {" (join "|" (uniq $names)) -}}
{{- $corefile = replace "    etcd xcc.test {" $block $corefile -}}
{{- end -}}
{{- $corefile -}}
{{- with .Values.reverseCIDRs -}}
{{- $keys := list -}}
{{- range . -}}{{- $keys = append $keys (printf "%s:{$DNS_PORT}" .) -}}{{- end -}}
{{- printf "\n# Reverse zones of the reverse CIDRs: PTR records only (the xcc-reverse snippet).\n%s {\n    import xcc-reverse\n}\n" (join " " $keys) -}}
{{- end -}}
{{- end -}}
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
