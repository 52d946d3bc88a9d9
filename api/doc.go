// Package api will hold tunnelgate's own custom resource types: the
// GatewayClassConfig that parameterises a GatewayClass, and ExternalBackend
// for backends that are not Kubernetes Services. Gateway API types come from
// upstream and are not redefined here.
package api
