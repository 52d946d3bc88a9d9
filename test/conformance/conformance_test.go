// Package conformance runs the upstream Gateway API conformance suite,
// sigs.k8s.io/gateway-api/conformance, against tunnelgate on a local
// cluster (harness_test.go), writes its report where
// $TUNNELGATE_CONFORMANCE_REPORT says (`make conformance`), and fails when
// the run falls behind the committed report (gate.go).
package conformance

import (
	"fmt"
	"io/fs"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/apis/v1alpha2"
	"sigs.k8s.io/gateway-api/apis/v1alpha3"
	xv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"
	"sigs.k8s.io/gateway-api/conformance"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/features"

	"github.com/tunnelgate/tunnelgate/test/kubelet"
	"github.com/tunnelgate/tunnelgate/test/netns"
)

func TestMain(m *testing.M) {
	kubelet.RunIfContainer()
	netns.Run(func() int { return m.Run() })
}

// supported are the features tunnelgate declares; the suite runs the
// extended tests of these and the core tests of each profile.
var supported = []features.FeatureName{
	features.SupportGateway, features.SupportHTTPRoute, features.SupportReferenceGrant, features.SupportGRPCRoute,
	features.SupportTLSRoute, features.SupportTLSRouteModeTerminate, features.SupportTCPRoute,
	features.SupportGatewayHTTPListenerIsolation, features.SupportListenerSet,
	features.SupportHTTPRouteQueryParamMatching, features.SupportHTTPRouteMethodMatching,
	features.SupportHTTPRouteResponseHeaderModification, features.SupportHTTPRouteBackendRequestHeaderModification,
	features.SupportHTTPRoutePortRedirect, features.SupportHTTPRouteSchemeRedirect, features.SupportHTTPRoutePathRedirect,
	features.SupportHTTPRoute303RedirectStatusCode, features.SupportHTTPRoute307RedirectStatusCode, features.SupportHTTPRoute308RedirectStatusCode,
	features.SupportHTTPRouteHostRewrite, features.SupportHTTPRoutePathRewrite,
	features.SupportHTTPRouteRequestMirror, features.SupportHTTPRouteRequestMultipleMirrors, features.SupportHTTPRouteRequestPercentageMirror,
	features.SupportHTTPRouteRequestTimeout, features.SupportHTTPRouteBackendTimeout,
	features.SupportHTTPRouteRetryCodes, features.SupportHTTPRouteRetryConnectionError,
	features.SupportHTTPRouteParentRefPort, features.SupportHTTPRouteNamedRouteRule, features.SupportGRPCRouteNamedRouteRule,
	features.SupportGRPCRouteRequestHeaderModifier, features.SupportGatewayRouteHostnameIntersectionPrecedence,
	features.SupportHTTPRouteBackendURLRewrite,
	features.SupportHTTPRouteBackendProtocolH2C, features.SupportHTTPRouteBackendProtocolWebSocket,
	features.SupportHTTPRouteCORS,
	features.SupportBackendTLSPolicy, features.SupportBackendTLSPolicySANValidation, features.SupportClusterTrustBundle,
	features.SupportGatewayBackendClientCertificate, features.SupportGatewayPort8080,
	features.SupportHTTPRouteDestinationPortMatching, features.SupportGatewayHTTPSListenerDetectMisdirectedRequests,
	features.SupportGatewayFrontendClientCertificateValidation, features.SupportGatewayFrontendClientCertificateValidationInsecureFallback,
	features.SupportGatewayStaticAddresses, features.SupportGatewayAddressEmpty,
	features.SupportGatewayAddressRoutability, features.SupportGatewayAddressRoutabilityCluster,
	features.SupportGatewayInfrastructure,
}

// skipped are tests of declared features that tunnelgate does not pass,
// each with the reason (docs/conformance.md repeats it).
var skipped = map[string]string{}

func TestConformance(t *testing.T) {
	h := startHarness(t)
	log.SetLogger(zap.New(zap.WriteTo(os.Stdout), zap.UseDevMode(true)))

	cl, err := client.New(h.env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, install := range []func(*runtime.Scheme) error{v1alpha3.Install, v1alpha2.Install, xv1alpha1.Install, gwv1.Install, apiextensionsv1.AddToScheme} {
		if err := install(cl.Scheme()); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := kubernetes.NewForConfig(h.env.Config)
	if err != nil {
		t.Fatal(err)
	}
	// The suite writes its report when the test ends; the gate then
	// compares it with the committed one (registered first, so it runs
	// after the suite's own cleanup).
	reportPath := os.Getenv("TUNNELGATE_CONFORMANCE_REPORT")
	if reportPath == "" {
		reportPath = filepath.Join(t.TempDir(), "report.yaml")
	}
	// TUNNELGATE_CONFORMANCE_RUN names one test to run, while working on
	// it; such a run is not compared with the committed report.
	only := os.Getenv("TUNNELGATE_CONFORMANCE_RUN")
	if only == "" {
		t.Cleanup(func() { gate(t, reportPath) })
	}
	opts := suite.ConformanceOptions{
		ConfigurableOptions: suite.ConfigurableOptions{
			GatewayClassName:     gatewayClass,
			CleanupBaseResources: true,
			CleanupTestResources: true,
			SupportedFeatures:    supported,
			ConformanceProfiles: []suite.ConformanceProfileName{
				suite.GatewayHTTPConformanceProfileName, suite.GatewayGRPCConformanceProfileName,
				suite.GatewayTLSConformanceProfileName, suite.GatewayTCPConformanceProfileName,
			},
			TimeoutConfig: config.DefaultTimeoutConfig(),
			Mode:          "default",
			RunTest:       only,
			SkipTests:     slices.Collect(maps.Keys(skipped)),
			// A static address the pool can give (its last, which the
			// lowest-first allocation reaches last) and one outside it.
			UsableNetworkAddresses:   []gwv1.GatewaySpecAddress{{Type: new(gwv1.IPAddressType), Value: lastOf(gatewayPool).String()}},
			UnusableNetworkAddresses: []gwv1.GatewaySpecAddress{{Type: new(gwv1.IPAddressType), Value: netns.Addr(201 << 8).String()}},
			ReportOutputPath:         reportPath,
			Implementation: confv1.Implementation{
				Organization: "tunnelgate", Project: "tunnelgate",
				URL: "https://github.com/tunnelgate/tunnelgate", Version: version(),
				Contact: []string{"https://github.com/tunnelgate/tunnelgate/issues"},
			},
		},
		Client: cl, Clientset: cs, RestConfig: h.env.Config,
		ManifestFS: []fs.FS{&conformance.Manifests},
	}
	conformance.RunConformanceWithOptions(t, opts)
}

// lastOf is the last address of an IPv4 prefix that is not its broadcast.
func lastOf(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 2
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) + host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// reportDir holds the committed report, laid out as upstream's
// conformance/reports asks (<Gateway API minor>/<project>/, with a
// README.md), so it can be submitted as it is: a passing `make conformance`
// puts its report there as <channel>-<version>-<mode>-report.yaml.
const reportDir = "reports/v1.7/tunnelgate"

// version is the implementation version the report names: what
// $TUNNELGATE_CONFORMANCE_VERSION says (`make conformance` passes the
// commit or tag, as upstream wants a snapshot), else "dev".
func version() string {
	if v := os.Getenv("TUNNELGATE_CONFORMANCE_VERSION"); v != "" {
		return v
	}
	return "dev"
}

// committedReport is the report the gate compares runs with: the one
// report file in reportDir.
func committedReport() (string, error) {
	files, err := filepath.Glob(filepath.Join(reportDir, "*-report.yaml"))
	if err != nil {
		return "", err
	}
	switch len(files) {
	case 0:
		return "", os.ErrNotExist
	case 1:
		return files[0], nil
	}
	return "", fmt.Errorf("%s holds %d reports (%s): keep the one to compare with", reportDir, len(files), strings.Join(files, ", "))
}

// gate fails the test when the run's report falls behind the committed one.
func gate(t *testing.T, path string) {
	got, err := readReport(path)
	if err != nil {
		t.Errorf("reading the run's report: %v", err)
		return
	}
	committed, err := committedReport()
	if os.IsNotExist(err) {
		t.Logf("no report in %s to compare with: commit this run's report to set the bar", reportDir)
		return
	}
	if err != nil {
		t.Error(err)
		return
	}
	base, err := readReport(committed)
	if err != nil {
		t.Error(err)
		return
	}
	for _, r := range regressions(base, got) {
		t.Errorf("behind %s: %s", committed, r)
	}
}
