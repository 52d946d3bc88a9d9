package configwatch

import (
	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// Watched is a *dataplane.Proxy as the proxy command hands it to New
// (cmd/internal/proxycmd), for this package's tests. It is exported to the
// external tests from here, a test file: the package itself does not
// import the proxy.
type Watched struct{ *dataplane.Proxy }

func (w Watched) Apply(cfg *proxycfg.Config) (LoadKind, error) {
	how, err := w.Proxy.Apply(cfg)
	if err != nil {
		return LoadFull, err
	}
	switch how {
	case dataplane.AppliedClusters:
		return LoadClusters, nil
	case dataplane.AppliedRoutes:
		return LoadRoutes, nil
	}
	return LoadFull, nil
}
