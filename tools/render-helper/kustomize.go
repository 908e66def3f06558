// kustomize: a component's files in, `kustomize build` of one kustomization out, on an
// in-memory file system with the namespace, image overrides and replicas fief sets from the
// component's values, then Flux's post-build `${var}` substitution; remote bases are refused.
package main

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/envsubst"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// kustomizeSettings is what a component's values set in the build: `images` and `replicas`
// go into the wrapping kustomization (as Argo CD's `kustomize.images` / `kustomize.replicas`
// and `kustomize edit set image` do), `substitute` is Flux's `postBuild.substitute`, run over
// every built object when `substitution` is set.
type kustomizeSettings struct {
	Images       []types.Image     `json:"images,omitempty"`
	Replicas     []types.Replica   `json:"replicas,omitempty"`
	Substitute   map[string]string `json:"substitute,omitempty"`
	Substitution bool              `json:"substitution,omitempty"`
}

// varName is the form Flux accepts for a substitution variable's name.
var varName = regexp.MustCompile(`^[_[:alpha:]][_[:alpha:][:digit:]]*$`)

// substituteKey, set to `disabled` as a label or annotation, keeps an object out of the
// substitution (Flux's key, so a kustomization written for Flux works unchanged).
const substituteKey = "kustomize.toolkit.fluxcd.io/substitute"

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
	settings := req.Kustomize
	if settings == nil {
		settings = &kustomizeSettings{}
	}
	docs, err := kustomizeBuild(files, req.Root, req.Namespace, settings)
	if err != nil {
		return answer{Error: err.Error()}
	}
	return answer{Documents: docs}
}

// kustomizeBuild runs krusty over the files under /src, from a wrapping kustomization in
// /fief that names `root` and sets `namespace`, the images and the replicas; then substitutes.
func kustomizeBuild(files map[string]string, root, namespace string, settings *kustomizeSettings) ([]document, error) {
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
	if len(settings.Images) > 0 {
		wrap["images"] = settings.Images
	}
	if len(settings.Replicas) > 0 {
		wrap["replicas"] = settings.Replicas
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
		if settings.Substitution {
			if err := substitute(r, settings.Substitute); err != nil {
				return nil, fmt.Errorf("kustomize build %s: %s %s: ${var} substitution: %v", root, r.GetKind(), r.GetName(), err)
			}
		}
		out, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		docs = append(docs, document{Source: root, Text: string(out)})
	}
	return docs, nil
}

// substitute is Flux's post-build substitution of one object (fluxcd/pkg/kustomize
// SubstituteVariables, not strict): `${name}` and the bash forms `${name:=default}` etc. in the
// object's YAML are replaced from `vars`, an unset name by the empty string; `$${name}` stays
// `${name}`; an object labelled or annotated `kustomize.toolkit.fluxcd.io/substitute:
// disabled` is left as it is. The text is read back as Flux reads it (YAML to JSON).
func substitute(r *resource.Resource, vars map[string]string) error {
	if r.GetLabels()[substituteKey] == "disabled" || r.GetAnnotations()[substituteKey] == "disabled" {
		return nil
	}
	names := make([]string, 0, len(vars))
	for name := range vars {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !varName.MatchString(name) {
			return fmt.Errorf("'%s' var name is invalid, must match '%s'", name, varName)
		}
	}
	text, err := r.AsYAML()
	if err != nil {
		return err
	}
	out, err := envsubst.Eval(string(text), func(name string) (string, bool) {
		return vars[name], true
	})
	if err != nil {
		return err
	}
	data, err := yaml.YAMLToJSON([]byte(out))
	if err != nil {
		return err
	}
	return r.UnmarshalJSON(data)
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
