{{/*
Names. Every object is "<fullname>-<part>"; fullname is the release name,
with "-tunnelgate" added unless it already says tunnelgate.
*/}}
{{- define "tunnelgate.fullname" -}}
{{- if contains "tunnelgate" .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-tunnelgate" .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "tunnelgate.controller.name" -}}{{ include "tunnelgate.fullname" . }}-controller{{- end -}}
{{- define "tunnelgate.proxy.name" -}}{{ include "tunnelgate.fullname" . }}-proxy{{- end -}}
{{- define "tunnelgate.sessionKeys.secret" -}}{{ .Values.sessionKeys.existingSecret | default (printf "%s-session-keys" (include "tunnelgate.fullname" .)) }}{{- end -}}
{{- /* The origin socket, with proxy.originTransport unix (an opt-in: WebSockets fail over it, values.yaml). */ -}}
{{- define "tunnelgate.originSocket" -}}
{{- if eq .Values.proxy.originTransport "unix" }}/var/run/tunnelgate/origin.sock{{ end -}}
{{- end -}}
{{- define "tunnelgate.internal.secret" -}}{{ .Values.internalTLS.existingSecret | default (printf "%s-internal" (include "tunnelgate.fullname" .)) }}{{- end -}}

{{/* Labels on every object; selectorLabels never change after install. */}}
{{- define "tunnelgate.labels" -}}
app.kubernetes.io/name: tunnelgate
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "tunnelgate.selectorLabels" -}}
app.kubernetes.io/name: tunnelgate
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tunnelgate.controller.selectorLabels" -}}
{{ include "tunnelgate.selectorLabels" . }}
app.kubernetes.io/component: controller
{{- end -}}

{{- define "tunnelgate.proxy.selectorLabels" -}}
{{ include "tunnelgate.selectorLabels" . }}
app.kubernetes.io/component: proxy
{{- end -}}

{{/* image renders repository:tag or repository@digest of an image value. */}}
{{- define "tunnelgate.image" -}}
{{- $img := index . 0 -}}{{- $default := index . 1 -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository ($img.tag | default $default) -}}
{{- end -}}
{{- end -}}

{{/*
tunnel decodes the tunnel token given as a value into a dict with the
account ("a") and the tunnel ID ("t"), or returns an empty dict. A token
that is not base64 JSON with both fails the install with a clear message.
*/}}
{{- define "tunnelgate.tunnelTokenFields" -}}
{{- $tok := .Values.cloudflare.tunnel.token.value | trim -}}
{{- if $tok -}}
{{- $json := b64dec $tok -}}
{{- if not (hasPrefix "{" $json) -}}
{{- fail "cloudflare.tunnel.token.value is not a tunnel token: expected base64 of a JSON object (copy it from the dashboard or `cloudflared tunnel token <name>`)" -}}
{{- end -}}
{{- $f := fromJson $json -}}
{{- if or (not $f.a) (not $f.t) -}}
{{- fail "cloudflare.tunnel.token.value is not a tunnel token: it has no account (a) or tunnel ID (t)" -}}
{{- end -}}
{{- dict "a" $f.a "t" $f.t | toJson -}}
{{- else -}}
{}
{{- end -}}
{{- end -}}

{{/* tunnelTokenSecret is the Secret and key cloudflared reads its token from. */}}
{{- define "tunnelgate.tunnelTokenSecret" -}}
{{- $t := .Values.cloudflare.tunnel.token -}}
{{- if $t.existingSecret -}}
{{- dict "name" $t.existingSecret "key" $t.key | toJson -}}
{{- else -}}
{{- dict "name" (printf "%s-tunnel-token" (include "tunnelgate.fullname" .)) "key" "token" | toJson -}}
{{- end -}}
{{- end -}}

{{/* apiTokenSecret is the Secret and key the controller's API token is in. */}}
{{- define "tunnelgate.apiTokenSecret" -}}
{{- $t := .Values.cloudflare.apiToken -}}
{{- if $t.existingSecret -}}
{{- dict "name" $t.existingSecret "key" $t.key | toJson -}}
{{- else -}}
{{- dict "name" (printf "%s-cloudflare-api" (include "tunnelgate.fullname" .)) "key" "token" | toJson -}}
{{- end -}}
{{- end -}}

{{/*
controllerWritesToken: the tunnel is given by id or name, so the controller
fetches its token and keeps it in the tunnel token Secret.
*/}}
{{- define "tunnelgate.controllerWritesToken" -}}
{{- $t := .Values.cloudflare.tunnel -}}
{{- if and (not $t.token.value) (not $t.token.existingSecret) -}}true{{- end -}}
{{- end -}}

{{/*
topologySpread: the given constraints, or a soft spread over nodes and
zones for the component's pods.
*/}}
{{- define "tunnelgate.topologySpread" -}}
{{- $root := index . 0 -}}{{- $component := index . 1 -}}{{- $given := index . 2 -}}
{{- if $given -}}
{{ toYaml $given }}
{{- else -}}
{{- range $key := list "kubernetes.io/hostname" "topology.kubernetes.io/zone" }}
- maxSkew: 1
  topologyKey: {{ $key }}
  whenUnsatisfiable: ScheduleAnyway
  labelSelector:
    matchLabels:
      {{- include "tunnelgate.selectorLabels" $root | nindent 6 }}
      app.kubernetes.io/component: {{ $component }}
{{- end }}
{{- end -}}
{{- end -}}

{{/*
gomemlimit tells the Go runtime the container's memory limit, so it
collects harder as the heap nears it instead of being OOM-killed.
*/}}
{{- define "tunnelgate.gomemlimit" -}}
{{- $container := index . 0 -}}{{- $res := index . 1 -}}
{{- if and $res $res.limits $res.limits.memory -}}
- name: GOMEMLIMIT
  valueFrom:
    resourceFieldRef:
      containerName: {{ $container }}
      resource: limits.memory
      divisor: "1"
{{- end -}}
{{- end -}}

{{/*
logArgs are the log flags both processes take. (The controller's
-v, if set, wins for the level.)
*/}}
{{- define "tunnelgate.logArgs" -}}
- -log-level={{ .Values.observability.logLevel }}
- -log-format={{ .Values.observability.logFormat }}
{{- end -}}

{{/*
tracingEnv sets the standard OpenTelemetry variables for a container of
service (list . "tunnelgate-proxy"), when tracing is on. POD_NAME and
POD_NAMESPACE must be defined before it.
*/}}
{{- define "tunnelgate.tracingEnv" -}}
{{- $root := index . 0 -}}
{{- $t := $root.Values.observability.tracing -}}
{{- if $t.enabled -}}
- name: OTEL_TRACES_EXPORTER
  value: otlp
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ $t.endpoint | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ $t.protocol | quote }}
- name: OTEL_TRACES_SAMPLER
  value: {{ $t.sampler | quote }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ $t.samplerArg | toString | quote }}
- name: OTEL_SERVICE_NAME
  value: {{ index . 1 }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: k8s.namespace.name=$(POD_NAMESPACE),k8s.pod.name=$(POD_NAME)
{{- end -}}
{{- end -}}

{{/*
The addresses the controller writes on Gateways' status after the
tunnel's hostname: controller.gatewayAddress, then the in-cluster
Service's DNS name when it is on, with routability Cluster (the name of a
ClusterIP Service). Comma-separated, as -gateway-address takes them.
*/}}
{{- define "tunnelgate.gatewayAddresses" -}}
{{- $list := list -}}
{{- with .Values.controller.gatewayAddress }}{{ $list = append $list . }}{{ end -}}
{{- $svc := .Values.proxy.inClusterService -}}
{{- if $svc.enabled -}}
{{- $list = append $list (printf "%s-http.%s.svc.%s=Cluster" (include "tunnelgate.proxy.name" .) .Release.Namespace $svc.clusterDomain) -}}
{{- end -}}
{{- join "," $list -}}
{{- end -}}

{{/*
The settings every dedicated data plane shares, as JSON for the
controller's -planes flag (ctrl/provision.Install): the chart's proxy Pod
shape, so a plane's Pods are the chart's proxies, named for one Gateway.
*/}}
{{- define "tunnelgate.planes" -}}
{{- $p := .Values.proxy -}}
{{- $cfd := .Values.cloudflared -}}
{{- /* This release's proxies: they alone reach the relay of a plane they relay to (GatewayConfig classTunnel). */ -}}
{{- $relayFrom := list (dict
  "namespaceSelector" (dict "matchLabels" (dict "kubernetes.io/metadata.name" .Release.Namespace))
  "podSelector" (dict "matchLabels" (include "tunnelgate.proxy.selectorLabels" . | fromYaml))) -}}
{{- dict
  "proxyImage" (include "tunnelgate.image" (list .Values.image .Chart.AppVersion))
  "cloudflaredImage" (include "tunnelgate.image" (list $cfd.image $cfd.image.tag))
  "controllerURL" (printf "https://%s.%s.svc:8081" (include "tunnelgate.controller.name" .) .Release.Namespace)
  "tunnelProtocol" $cfd.protocol
  "gracePeriod" $cfd.gracePeriod
  "cloudflaredArgs" ($cfd.extraArgs | default list)
  "terminationGracePeriodSeconds" (int $p.terminationGracePeriodSeconds)
  "proxyResources" (pick ($p.resources | default dict) "requests" "limits")
  "cloudflaredResources" (pick ($cfd.resources | default dict) "requests" "limits")
  "networkPolicy" (ternary (dict "metricsFrom" .Values.networkPolicy.metricsFrom "relayFrom" $relayFrom) nil .Values.networkPolicy.enabled)
  | toJson -}}
{{- end }}
