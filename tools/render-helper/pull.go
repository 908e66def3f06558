// Pull: one chart archive fetched from a Helm HTTP repository (its index.yaml) or an OCI
// registry, with Helm's own getter and registry client, written to stdout.
//
// In: `fief-render-helper pull <repository> <name> <version>`, the version exact. Out: the
// chart's .tgz on stdout, or a one-line reason on stderr and exit status 1. This is the only
// mode that opens a connection; fief runs it only for a chart whose digest it has not cached,
// and checks the digest of what it gets.
package main

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"

	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"
)

// runPull is the `pull` mode: its arguments in, the archive out on `out`.
func runPull(args []string, out io.Writer) error {
	if len(args) != 3 {
		return fmt.Errorf("usage: fief-render-helper pull <repository> <name> <version>")
	}
	repository, name, version := strings.TrimSuffix(args[0], "/"), args[1], args[2]
	// The index.yaml Helm downloads goes to a private temporary cache, removed after.
	tmp, err := os.MkdirTemp("", "fief-pull-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	_ = os.Setenv("HELM_CACHE_HOME", tmp)
	settings := cli.New()
	var data []byte
	if strings.HasPrefix(repository, "oci://") {
		data, err = pullOCI(settings, repository, name, version)
	} else {
		data, err = pullHTTP(settings, repository, name, version)
	}
	if err != nil {
		return err
	}
	_, err = out.Write(data)
	return err
}

// pullOCI pulls `<repository>/<name>:<version>` (a `+` in the version is `_` in the tag, as
// Helm pushes it). A registry on a loopback address is spoken to over plain HTTP, as Docker
// treats 127.0.0.0/8 registries as insecure by default.
func pullOCI(settings *cli.EnvSettings, repository, name, version string) ([]byte, error) {
	ref := strings.TrimPrefix(repository, "oci://") + "/" + name + ":" + strings.ReplaceAll(version, "+", "_")
	opts := []registry.ClientOption{
		registry.ClientOptWriter(io.Discard),
		registry.ClientOptCredentialsFile(settings.RegistryConfig),
	}
	if isLoopback(strings.TrimPrefix(repository, "oci://")) {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	client, err := registry.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	res, err := client.Pull(ref, registry.PullOptWithChart(true))
	if err != nil {
		return nil, fmt.Errorf("pulling oci://%s: %w", ref, err)
	}
	return res.Chart.Data, nil
}

// pullHTTP finds the version in the repository's index.yaml and downloads its first URL
// (resolved against the repository's, as `helm pull --repo` does).
func pullHTTP(settings *cli.EnvSettings, repository, name, version string) ([]byte, error) {
	getters := getter.All(settings)
	chartURL, err := repo.FindChartInRepoURL(repository, name, version, "", "", "", getters)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(chartURL)
	if err != nil {
		return nil, err
	}
	g, err := getters.ByScheme(u.Scheme)
	if err != nil {
		return nil, err
	}
	buf, err := g.Get(chartURL, getter.WithURL(repository))
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %w", chartURL, err)
	}
	return buf.Bytes(), nil
}

// isLoopback says whether the host of `hostPath` (host[:port]/path) is a loopback address or
// localhost.
func isLoopback(hostPath string) bool {
	host := strings.SplitN(hostPath, "/", 2)[0]
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
