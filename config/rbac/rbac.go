// Package rbac embeds the RBAC rules of tunnelgate's processes, so that
// the integration tests run the controller with exactly what the Helm
// chart grants.
package rbac

import _ "embed"

// ControllerYAML is the controller's ClusterRole and its leader election
// Role (namespaced where it is bound), as a multi-document YAML stream.
//
//go:embed controller.yaml
var ControllerYAML []byte
