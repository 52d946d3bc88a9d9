{{/*
alertGroups renders the Prometheus rule groups, for the PrometheusRule and
for the rules-file ConfigMap alike. Every metric is in docs/metrics.md
(test/chart checks). Aggregations keep namespace (and job where the
replicas matter) so two installs alert apart. Ratios ignore series under
one request every 10 s, where a single failure is no trend.
*/}}
{{- define "tunnelgate.alertGroups" -}}
{{- $t := .Values.metrics.prometheusRule.thresholds -}}
- name: tunnelgate-proxy
  rules:
  - alert: TunnelgateProxyConfigStale
    # The watch long-polls for under a minute, so silence this long means
    # the controller is unreachable or refusing the proxy.
    expr: time() - tunnelgate_config_watch_last_success_seconds > {{ $t.configStaleSeconds }}
    for: 5m
    labels:
      severity: warning
    annotations:
      summary: A proxy has not heard from the controller.
      description: "{{`Proxy {{ $labels.pod }} ({{ $labels.namespace }}) last got an answer from the controller {{ $value | humanizeDuration }} ago. It keeps serving its last config; route and endpoint changes do not reach it. Check the controller and the tunnelgate_config_watch_failures_total reasons.`}}"
  - alert: TunnelgateProxyConfigRejected
    expr: increase(tunnelgate_config_loads_total{result="rejected"}[10m]) > 0
    labels:
      severity: warning
    annotations:
      summary: A proxy refused a config.
      description: "{{`Proxy {{ $labels.pod }} ({{ $labels.namespace }}) rejected a config in the last 10 minutes and serves the last good one. Its log says why; the controller and the proxy disagree on what is valid (different versions?).`}}"
  - alert: TunnelgateProxyNotReady
    expr: tunnelgate_ready == 0
    for: 10m
    labels:
      severity: warning
    annotations:
      summary: A proxy has no config to serve.
      description: "{{`Proxy {{ $labels.pod }} ({{ $labels.namespace }}) has not loaded a config for 10 minutes and answers every request with 503.`}}"
  - alert: TunnelgateRouteErrors
    expr: |-
      (
        sum by (namespace, route) (rate(tunnelgate_route_requests_total{class="5xx"}[5m]))
      /
        sum by (namespace, route) (rate(tunnelgate_route_requests_total[5m]))
      ) > {{ $t.route5xxRatio }}
      and
      sum by (namespace, route) (rate(tunnelgate_route_requests_total[5m])) > 0.1
    for: 10m
    labels:
      severity: warning
    annotations:
      summary: A route answers many 5xx.
      description: "{{`{{ $value | humanizePercentage }} of the responses on route {{ $labels.route }} ({{ $labels.namespace }}) were 5xx over the last 5 minutes.`}}"
  - alert: TunnelgateUpstreamFailures
    expr: |-
      (
        sum by (namespace, cluster) (rate(tunnelgate_upstream_requests_total{result=~"error|timeout"}[5m]))
      /
        sum by (namespace, cluster) (rate(tunnelgate_upstream_requests_total[5m]))
      ) > {{ $t.upstreamFailureRatio }}
      and
      sum by (namespace, cluster) (rate(tunnelgate_upstream_requests_total[5m])) > 0.1
    for: 10m
    labels:
      severity: warning
    annotations:
      summary: A backend cluster fails or times out.
      description: "{{`{{ $value | humanizePercentage }} of the attempts sent to cluster {{ $labels.cluster }} ({{ $labels.namespace }}) got no answer or timed out over the last 5 minutes.`}}"
  - alert: TunnelgateClusterNoEndpoints
    # The config holds only clusters some route points at, so an empty
    # one is a backend that routes send traffic to and nobody serves.
    expr: max by (namespace, cluster) (tunnelgate_cluster_endpoints) == 0
    for: 10m
    labels:
      severity: warning
    annotations:
      summary: A backend a route uses has no endpoints.
      description: "{{`Cluster {{ $labels.cluster }} ({{ $labels.namespace }}) has had no ready endpoints for 10 minutes; requests routed to it get 503.`}}"
  - alert: TunnelgateAccessLogDropping
    expr: sum by (namespace, pod) (rate(tunnelgate_access_log_lines_total{result="dropped"}[5m])) > 0
    for: 10m
    labels:
      severity: warning
    annotations:
      summary: A proxy drops access log lines.
      description: "{{`Proxy {{ $labels.pod }} ({{ $labels.namespace }}) drops {{ $value | humanize }} access log lines a second: the log's destination is slower than the traffic. Sample the access log or make its output faster.`}}"
- name: tunnelgate-controller
  rules:
  - alert: TunnelgateControllerSyncErrors
    expr: sum by (namespace, job) (increase(tunnelgate_controller_sync_errors_total[10m])) > 0
    for: 10m
    labels:
      severity: warning
    annotations:
      summary: The controller fails to write statuses.
      description: "{{`Syncs of {{ $labels.job }} ({{ $labels.namespace }}) have failed to write statuses for 10 minutes (retried with backoff). The controller's log says which object and why.`}}"
  - alert: TunnelgateControllerNoLeader
    expr: max by (namespace, job) (tunnelgate_controller_leader) == 0
    for: 5m
    labels:
      severity: critical
    annotations:
      summary: No controller replica leads.
      description: "{{`No replica of {{ $labels.job }} ({{ $labels.namespace }}) has held the leader Lease for 5 minutes: statuses, DNS records and the tunnel's ingress are not updated. Proxies still get configs.`}}"
  - alert: TunnelgateControllerSyncSlow
    expr: histogram_quantile(0.99, sum by (namespace, job, le) (rate(tunnelgate_controller_sync_duration_seconds_bucket[10m]))) > {{ $t.syncP99Seconds }}
    for: 15m
    labels:
      severity: warning
    annotations:
      summary: Controller syncs are slow.
      description: "{{`The 99th percentile of sync durations of {{ $labels.job }} ({{ $labels.namespace }}) is {{ $value | humanizeDuration }}: changes take that long to reach proxies and statuses.`}}"
  - alert: TunnelgateCloudflareAPIErrors
    expr: sum by (namespace, job, operation, outcome) (increase(tunnelgate_cloudflare_api_calls_total{outcome=~"client_error|server_error|network"}[10m])) > 0
    for: 15m
    labels:
      severity: warning
    annotations:
      summary: Cloudflare API calls fail.
      description: "{{`Cloudflare API calls {{ $labels.operation }} of {{ $labels.job }} ({{ $labels.namespace }}) have failed with {{ $labels.outcome }} for 15 minutes. client_error is mostly the API token's scopes; server_error and network are Cloudflare's side or the way there.`}}"
  - alert: TunnelgateCloudflareRateLimited
    expr: sum by (namespace, job) (increase(tunnelgate_cloudflare_api_calls_total{outcome="rate_limited"}[10m])) > 0
    for: 10m
    labels:
      severity: warning
    annotations:
      summary: Cloudflare rate-limits the controller.
      description: "{{`Cloudflare has answered calls of {{ $labels.job }} ({{ $labels.namespace }}) with 429 for 10 minutes, so DNS and tunnel changes are delayed. Another client of the same API token may be using up its quota.`}}"
- name: tunnelgate-process
  rules:
  - alert: TunnelgateMemoryNearLimit
    # The chart hands each container's memory limit to Go as GOMEMLIMIT,
    # so go_gc_gomemlimit_bytes is the limit, from the same scrape (no
    # kube-state-metrics needed); without a limit it is MaxInt64 and this
    # never fires. The join keeps proxy and controller targets, leaving
    # out cloudflared, which is scraped under the proxies' job.
    expr: |-
      process_resident_memory_bytes / go_gc_gomemlimit_bytes > {{ $t.memoryLimitRatio }}
      and on (job, instance)
      (tunnelgate_ready or tunnelgate_controller_leader)
    for: 15m
    labels:
      severity: warning
    annotations:
      summary: A tunnelgate process nears its memory limit.
      description: "{{`Pod {{ $labels.pod }} of {{ $labels.job }} ({{ $labels.namespace }}) has held {{ $value | humanizePercentage }} of its memory limit resident for 15 minutes. Near the limit Go collects garbage ever more often, costing CPU, and past it the container is OOM-killed. Raise resources.limits.memory, or see what grows on the dashboard's Processes row and in /debug/pprof/heap.`}}"
{{- end -}}
