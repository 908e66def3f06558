// kustomize: a component's files in, `kustomize build` of one kustomization out, on an
// in-memory file system with the namespace fief sets; remote bases are refused.
package main

import (
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// kustomizationNames are the file names kustomize reads as a kustomization.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// renderKustomize builds the kustomization in `root` of the request's files, wrapped in one
// that sets the namespace.
func (s *store) renderKustomize(req *request) answer {
	s.mu.Lock()
	files, ok := s.kusts[req.Key]
	if !ok && req.Files != nil {
		if len(s.kusts) >= maxCached {
			s.kusts = map[string]map[string]string{}
		}
		s.kusts[req.Key] = req.Files
		files, ok = req.Files, true
	}
	s.mu.Unlock()
	if !ok {
		return answer{Missing: true}
	}
	if err := refuseRemote(files); err != nil {
		return answer{Error: err.Error()}
	}
	docs, err := kustomizeBuild(files, req.Root, req.Namespace)
	if err != nil {
		return answer{Error: err.Error()}
	}
	return answer{Documents: docs}
}

// kustomizeBuild runs krusty over the files under /src, from a wrapping kustomization in
// /fief that names `root` and sets `namespace`.
func kustomizeBuild(files map[string]string, root, namespace string) ([]document, error) {
	fs := filesys.MakeFsInMemory()
	for name, text := range files {
		if err := fs.WriteFile(joinRoot("src", name), []byte(text)); err != nil {
			return nil, err
		}
	}
	wrap := map[string]interface{}{
		"apiVersion": "kustomize.config.k8s.io/v1beta1",
		"kind":       "Kustomization",
		"resources":  []string{"../src/" + strings.Trim(root, "/")},
	}
	if namespace != "" {
		wrap["namespace"] = namespace
	}
	text, err := yaml.Marshal(wrap)
	if err != nil {
		return nil, err
	}
	if err := fs.WriteFile("/fief/kustomization.yaml", text); err != nil {
		return nil, err
	}
	opts := krusty.MakeDefaultOptions()
	resources, err := krusty.MakeKustomizer(opts).Run(fs, "/fief")
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %s", root, strings.ReplaceAll(err.Error(), "/src/", ""))
	}
	docs := make([]document, 0, resources.Size())
	for _, r := range resources.Resources() {
		out, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		docs = append(docs, document{Source: root, Text: string(out)})
	}
	return docs, nil
}

// refuseRemote refuses a kustomization that names a remote base or resource (a URL or a
// git address): fief renders only what is in the repo.
func refuseRemote(files map[string]string) error {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !isKustomization(name) {
			continue
		}
		var k struct {
			Resources  []string `json:"resources"`
			Bases      []string `json:"bases"`
			Components []string `json:"components"`
		}
		if err := yaml.Unmarshal([]byte(files[name]), &k); err != nil {
			continue // krusty reports it with its own words
		}
		for _, entry := range append(append(k.Resources, k.Bases...), k.Components...) {
			if isRemote(entry) {
				return fmt.Errorf("%s: %q is a remote base; fief renders only what is in the repo (copy it into the component)", name, entry)
			}
		}
	}
	return nil
}

func isKustomization(name string) bool {
	base := name[strings.LastIndex(name, "/")+1:]
	for _, k := range kustomizationNames {
		if base == k {
			return true
		}
	}
	return false
}

func isRemote(entry string) bool {
	e := strings.ToLower(strings.TrimSpace(entry))
	return strings.Contains(e, "://") || strings.HasPrefix(e, "git@") ||
		strings.HasPrefix(e, "github.com/") || strings.HasPrefix(e, "gitlab.com/") ||
		strings.HasPrefix(e, "bitbucket.org/") || strings.Contains(e, "?ref=")
}
