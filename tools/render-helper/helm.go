// Helm: a chart's files in, its manifests out as `helm template --skip-tests` renders them
// (client only, revision 1, install): hooks kept with their annotations, test hooks skipped.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"sync"
	"unicode/utf8"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/ignore"
	"helm.sh/helm/v3/pkg/release"
)

const (
	helmVersion      = "v3.19.5"
	kustomizeVersion = "v0.21.2"
)

// maxCached bounds how many charts and kustomizations the helper keeps loaded.
const maxCached = 256

// store holds loaded charts and kustomization files by the key fief gave them.
type store struct {
	mu     sync.Mutex
	charts map[string]*chart.Chart
	// files of charts not loaded yet: kept as their request is read, loaded by the first
	// render that needs them.
	pending map[string]*chartFiles
	kusts   map[string]map[string]string
}

// chartFiles are a chart's files as a request carries them: text, and the others as bytes.
type chartFiles struct {
	text   map[string]string
	binary map[string][]byte
}

// filesOf are the chart files `req` carries; nil when it names its key alone.
func filesOf(req *request) *chartFiles {
	if req.Files == nil && req.Binary == nil {
		return nil
	}
	return &chartFiles{text: req.Files, binary: req.Binary}
}

func newStore() *store {
	return &store{
		charts:  map[string]*chart.Chart{},
		pending: map[string]*chartFiles{},
		kusts:   map[string]map[string]string{},
	}
}

func kubeVersion() string {
	return chartutil.DefaultCapabilities.KubeVersion.Version
}

// keep holds a request's files by its key before the request is rendered, so the requests
// read after it may name the key alone while it is still rendering.
func (s *store) keep(req *request) {
	files := filesOf(req)
	if files == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch req.Kind {
	case "helm":
		if _, ok := s.charts[req.Key]; !ok {
			if len(s.pending) >= maxCached {
				s.pending = map[string]*chartFiles{}
			}
			s.pending[req.Key] = files
		}
	case "kustomize":
		if req.Files == nil {
			return
		}
		if len(s.kusts) >= maxCached {
			s.kusts = map[string]map[string]string{}
		}
		s.kusts[req.Key] = req.Files
	}
}

// chartFor loads the request's chart once per key; nil with missing=true when neither the
// files nor a loaded chart are at hand.
func (s *store) chartFor(req *request) (*chart.Chart, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.charts[req.Key]; ok {
		return c, false, nil
	}
	files := filesOf(req)
	if held, ok := s.pending[req.Key]; ok {
		files = held
	}
	if files == nil {
		return nil, true, nil
	}
	c, err := loadChart(files)
	if err != nil {
		return nil, false, err
	}
	delete(s.pending, req.Key)
	if len(s.charts) >= maxCached {
		s.charts = map[string]*chart.Chart{}
	}
	s.charts[req.Key] = c
	return c, false, nil
}

// utf8BOM is the byte order mark Helm's loaders (LoadDir, LoadArchive) cut from the start of
// every chart file.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// loadChart is Helm's loader over the files, text and bytes alike, in name order, less those
// `.helmignore` names, each without a leading byte order mark as Helm's loaders read them.
func loadChart(all *chartFiles) (*chart.Chart, error) {
	names, err := loadedNames(all)
	if err != nil {
		return nil, fmt.Errorf("loading the chart: %s: %w", ignore.HelmIgnore, err)
	}
	files := make([]*loader.BufferedFile, 0, len(names))
	for _, name := range names {
		data, ok := all.binary[name]
		if !ok {
			data = []byte(all.text[name])
		}
		data = bytes.TrimPrefix(data, utf8BOM)
		files = append(files, &loader.BufferedFile{Name: name, Data: data})
	}
	c, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("loading the chart: %w", err)
	}
	return c, nil
}

// renderHelm renders one value set of a chart.
func (s *store) renderHelm(req *request) answer {
	loaded, missing, err := s.chartFor(req)
	if missing {
		return answer{Missing: true}
	}
	if err != nil {
		return answer{Error: err.Error()}
	}
	if err := checkDependencies(loaded); err != nil {
		return answer{Error: err.Error()}
	}
	// Rendering changes the chart (disabled subcharts are dropped, imported values merged):
	// each render works on its own copy of the loaded one.
	c := cloneChart(loaded)
	vals := map[string]interface{}{}
	if len(req.Values) > 0 && string(req.Values) != "null" {
		if err := json.Unmarshal(req.Values, &vals); err != nil {
			return answer{Error: "values: " + err.Error()}
		}
	}
	caps, err := capabilities(req)
	if err != nil {
		return answer{Error: err.Error()}
	}
	docs, err := helmTemplate(c, vals, req.Release, req.Namespace, caps)
	if err != nil {
		return answer{Error: err.Error()}
	}
	if req.IncludeCRDs {
		docs = append(crdDocuments(c), docs...)
	}
	if err := textOnly(docs); err != nil {
		return answer{Error: err.Error()}
	}
	return answer{Documents: docs}
}

// textOnly refuses a document that is not UTF-8 text (a template printing a binary file's
// bytes, a `crds/` file in another encoding): `helm template` prints such bytes as they are,
// while fief reads manifests as UTF-8 and the answer's JSON would change them.
func textOnly(docs []document) error {
	for _, d := range docs {
		if !utf8.ValidString(d.Text) {
			return fmt.Errorf("%s is not UTF-8 text once rendered: fief reads manifests as UTF-8 text (a binary file's bytes go into a manifest through b64enc)", d.Source)
		}
	}
	return nil
}

// checkDependencies refuses a chart whose Chart.yaml lists a dependency its charts/ folder
// lacks, in `helm template`'s words: it mirrors the check `helm template` runs before
// rendering (pkg/action.CheckDependencies: the top chart's dependencies by chart name,
// enabled or not, aliases aside).
func checkDependencies(c *chart.Chart) error {
	var missing []string
	for _, want := range c.Metadata.Dependencies {
		found := false
		for _, have := range c.Dependencies() {
			if have.Name() == want.Name {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, want.Name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("An error occurred while checking for chart dependencies. You may need to run `helm dependency build` to fetch missing dependencies: found in Chart.yaml, but missing in charts/ directory: %s", strings.Join(missing, ", "))
}

// capabilities are what `helm template --kube-version --api-versions` gives a chart: Helm's
// defaults, the Kubernetes version replaced and the API versions added.
func capabilities(req *request) (*chartutil.Capabilities, error) {
	caps := chartutil.DefaultCapabilities.Copy()
	if req.KubeVersion != "" {
		kv, err := chartutil.ParseKubeVersion(req.KubeVersion)
		if err != nil {
			return nil, fmt.Errorf("kubernetesVersion %q is not a Kubernetes version like 1.34.0: %v", req.KubeVersion, err)
		}
		caps.KubeVersion = *kv
	}
	caps.APIVersions = append(caps.APIVersions, req.APIVersions...)
	return caps, nil
}

// crdDocuments are the files of the chart's `crds/` folders (its own, then its enabled
// subcharts'), as `helm template --include-crds` prints them first: read, not templated.
func crdDocuments(c *chart.Chart) []document {
	crds := c.CRDObjects()
	docs := make([]document, 0, len(crds))
	for _, crd := range crds {
		docs = append(docs, document{Source: crd.Filename, Text: string(crd.File.Data), CRD: true})
	}
	return docs
}

// helmTemplate is the client-only part of Helm's install action that `helm template` runs.
func helmTemplate(c *chart.Chart, vals map[string]interface{}, name, namespace string, caps *chartutil.Capabilities) ([]document, error) {
	if err := chartutil.ProcessDependenciesWithMerge(c, vals); err != nil {
		return nil, err
	}
	options := chartutil.ReleaseOptions{Name: name, Namespace: namespace, Revision: 1, IsInstall: true}
	top, err := chartutil.ToRenderValuesWithSchemaValidation(c, vals, options, caps, false)
	if err != nil {
		return nil, err
	}
	if c.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(c.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", c.Metadata.KubeVersion, caps.KubeVersion.String())
	}
	var e engine.Engine
	files, err := e.Render(c, top)
	if err != nil {
		return nil, err
	}
	for k := range files {
		if strings.HasSuffix(k, "NOTES.txt") {
			delete(files, k)
		}
	}
	hooks, manifests, err := sortManifests(files)
	if err != nil {
		return nil, err
	}
	docs := make([]document, 0, len(manifests)+len(hooks))
	for _, m := range manifests {
		docs = append(docs, document{Source: m.Name, Text: m.Content})
	}
	return append(docs, hookDocuments(hooks)...), nil
}

// hookDocuments are the chart's hooks as `helm template --skip-tests` prints them: after the
// other manifests, in Helm's hook order (weight, then kind, then name), annotations kept, a
// hook any of whose events is `test` left out. fief reads `helm.sh/hook` to place each one in
// its ordered phase (pre, post) or to drop it (delete and rollback hooks).
func hookDocuments(hooks []*release.Hook) []document {
	docs := make([]document, 0, len(hooks))
	for _, h := range hooks {
		if isTestHook(h) {
			continue
		}
		docs = append(docs, document{Source: h.Path, Text: h.Manifest})
	}
	return docs
}

// isTestHook: the hook runs on `helm test`, which `--skip-tests` leaves out.
func isTestHook(h *release.Hook) bool {
	for _, ev := range h.Events {
		if ev == release.HookTest {
			return true
		}
	}
	return false
}

// cloneChart copies what rendering changes (metadata, dependencies), sharing the templates,
// files and values, which it only reads: Helm copies a chart's values before merging into
// them and replaces, never edits, the map when it imports a subchart's values.
func cloneChart(c *chart.Chart) *chart.Chart {
	cp := *c
	if c.Metadata != nil {
		meta := *c.Metadata
		meta.Dependencies = make([]*chart.Dependency, len(c.Metadata.Dependencies))
		for i, d := range c.Metadata.Dependencies {
			dep := *d
			meta.Dependencies[i] = &dep
		}
		cp.Metadata = &meta
	}
	subs := make([]*chart.Chart, 0, len(c.Dependencies()))
	for _, d := range c.Dependencies() {
		subs = append(subs, cloneChart(d))
	}
	cp.SetDependencies(subs...)
	return &cp
}

// joinRoot is a file's path under a folder of the in-memory tree.
func joinRoot(root, name string) string {
	return path.Join("/", root, name)
}
