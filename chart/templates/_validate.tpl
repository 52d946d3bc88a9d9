{{/*
validate fails the install, before anything reaches the cluster, on values
that fit the schema but not each other. values.schema.json checks each value
alone.
*/}}
{{- define "tunnelgate.validate" -}}
{{- if and .Values.observability.tracing.enabled (not .Values.observability.tracing.endpoint) -}}
{{- fail "observability.tracing: set endpoint to the OTLP collector (e.g. http://otel-collector.observability:4318) to enable tracing" -}}
{{- end -}}
{{- $cf := .Values.cloudflare -}}
{{- $t := $cf.tunnel -}}
{{- if and $cf.apiToken.value $cf.apiToken.existingSecret -}}
{{- fail "cloudflare.apiToken: give value or existingSecret, not both" -}}
{{- end -}}
{{- if and .Values.gatewayClass.create (not $cf.apiToken.value) (not $cf.apiToken.existingSecret) -}}
{{- fail "cloudflare.apiToken: the controller needs a Cloudflare API token: set cloudflare.apiToken.value (--set-file cloudflare.apiToken.value=FILE) or cloudflare.apiToken.existingSecret" -}}
{{- end -}}
{{- if and $t.token.value $t.token.existingSecret -}}
{{- fail "cloudflare.tunnel.token: give value or existingSecret, not both" -}}
{{- end -}}
{{- if $t.token.value -}}
{{- if or $t.id $t.name -}}
{{- fail "cloudflare.tunnel: the tunnel token already names the tunnel; leave tunnel.id and tunnel.name empty" -}}
{{- end -}}
{{- $f := include "tunnelgate.tunnelTokenFields" . | fromJson -}}
{{- if and $cf.accountID (ne $cf.accountID $f.a) -}}
{{- fail (printf "cloudflare.accountID is %s but the tunnel token belongs to account %s" $cf.accountID $f.a) -}}
{{- end -}}
{{- else if $t.token.existingSecret -}}
{{- if or (not $t.id) $t.name -}}
{{- fail "cloudflare.tunnel: with token.existingSecret, set tunnel.id to the tunnel that token runs (and no tunnel.name)" -}}
{{- end -}}
{{- else if and .Values.gatewayClass.create (eq (empty $t.id) (empty $t.name)) -}}
{{- fail "cloudflare.tunnel: name the tunnel in exactly one way: token.value, token.existingSecret (with id), id, or name" -}}
{{- end -}}
{{- if and $t.credentialRotation.interval (not (include "tunnelgate.controllerWritesToken" .)) -}}
{{- fail "cloudflare.tunnel.credentialRotation: tunnelgate can rotate only a tunnel token it writes; give the tunnel by id or name, not by token" -}}
{{- end -}}
{{- /* A ServiceMonitor whose every scrape the NetworkPolicy drops would
fail quietly (targets down); say so at install instead. */ -}}
{{- if and .Values.metrics.serviceMonitor.enabled .Values.networkPolicy.enabled (not .Values.networkPolicy.metricsFrom) -}}
{{- fail "metrics.serviceMonitor: the NetworkPolicy lets no pod reach the metrics ports while networkPolicy.metricsFrom is empty, so Prometheus could not scrape them; set networkPolicy.metricsFrom to your Prometheus pods (e.g. a namespaceSelector for its namespace)" -}}
{{- end -}}
{{- if and .Values.proxy.autoscaling.enabled (lt (int .Values.proxy.autoscaling.maxReplicas) (int .Values.proxy.autoscaling.minReplicas)) -}}
{{- fail "proxy.autoscaling: maxReplicas is below minReplicas" -}}
{{- end -}}
{{- end -}}
