// fief-chart-pull fetches one chart archive from a Helm HTTP repository (its index.yaml) or
// an OCI registry, with Helm's own getter and registry client, and writes it to stdout.
//
// In: `fief-chart-pull <repository> <name> <version>`, the version exact. Out: the chart's
// .tgz on stdout, or a one-line reason on stderr and exit status 1. It is the only program of
// fief's helpers that opens a connection; fief runs it only for a chart whose digest it has
// not cached, and checks the digest of what it gets. Credentials are Helm's own: for an HTTP
// repository, the entry of Helm's repository config (`helm repo add --username --password`,
// $HELM_REPOSITORY_CONFIG) whose URL is the repository's; for an OCI registry, Helm's
// registry config (`helm registry login`, $HELM_REGISTRY_CONFIG).
//
// It is a program of its own, not a mode of fief-render-helper, because Helm's getter,
// repository and registry packages (and the Kubernetes client packages they import) are
// initialised whenever a Go program that links them starts: kept apart, the long-lived
// render helper neither loads nor initialises them.
package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"strings"

	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"
)

func main() {
	if err := runPull(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fief-chart-pull:", err)
		os.Exit(1)
	}
}

// runPull fetches the chart its arguments name: the archive out on `out`.
func runPull(args []string, out io.Writer) error {
	if len(args) != 3 {
		return fmt.Errorf("usage: fief-chart-pull <repository> <name> <version>")
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
		return withCredentialsHint(err, repository)
	}
	_, err = out.Write(data)
	return err
}

// withCredentialsHint adds what to do to a refusal for want of credentials: Helm's getter
// says `401 Unauthorized` or `403 Forbidden`, the registry client `unauthorized` (matching
// the words, not the codes, so a version or a port with 401 in it is not taken for one).
func withCredentialsHint(err error, repository string) error {
	text := strings.ToLower(err.Error())
	if !strings.Contains(text, "unauthorized") && !strings.Contains(text, "forbidden") {
		return err
	}
	if strings.HasPrefix(repository, "oci://") {
		return fmt.Errorf("%w; the registry wants credentials: run `helm registry login %s` "+
			"(fief reads Helm's registry config, $HELM_REGISTRY_CONFIG; the agent its Secret fief-helm, key config.json)",
			err, strings.SplitN(strings.TrimPrefix(repository, "oci://"), "/", 2)[0])
	}
	return fmt.Errorf("%w; the repository wants credentials: run `helm repo add NAME %s --username USER "+
		"--password-stdin` (fief reads Helm's repository config, $HELM_REPOSITORY_CONFIG; the agent its "+
		"Secret fief-helm, key repositories.yaml)", err, repository)
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
// (resolved against the repository's, as `helm pull --repo` does), with the credentials and
// TLS settings of the repository's entry in Helm's repository config, if it has one. As in
// Helm, the user name and password go only to the repository's own scheme, host and port,
// unless the entry passes them to every host.
func pullHTTP(settings *cli.EnvSettings, repository, name, version string) ([]byte, error) {
	getters := getter.All(settings)
	entry, err := repositoryEntry(settings.RepositoryConfig, repository)
	if err != nil {
		return nil, err
	}
	chartURL, err := repo.FindChartInAuthAndTLSAndPassRepoURL(repository, entry.Username, entry.Password,
		name, version, entry.CertFile, entry.KeyFile, entry.CAFile, entry.InsecureSkipTLSverify,
		entry.PassCredentialsAll, getters)
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
	buf, err := g.Get(chartURL,
		getter.WithURL(repository),
		getter.WithBasicAuth(entry.Username, entry.Password),
		getter.WithPassCredentialsAll(entry.PassCredentialsAll),
		getter.WithTLSClientConfig(entry.CertFile, entry.KeyFile, entry.CAFile),
		getter.WithInsecureSkipVerifyTLS(entry.InsecureSkipTLSverify))
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %w", chartURL, err)
	}
	return buf.Bytes(), nil
}

// repositoryEntry is the entry of Helm's repository config at `path` whose URL is
// `repository` (a trailing `/` ignored); an empty entry when the file does not exist or names
// no such repository, so a public repository needs no config.
func repositoryEntry(path, repository string) (repo.Entry, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return repo.Entry{}, nil
	}
	file, err := repo.LoadFile(path)
	if err != nil {
		return repo.Entry{}, fmt.Errorf("reading Helm's repository config: %w", err)
	}
	for _, e := range file.Repositories {
		if e != nil && strings.TrimSuffix(e.URL, "/") == repository {
			return *e, nil
		}
	}
	return repo.Entry{}, nil
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
