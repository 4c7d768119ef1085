// Package k8stest renders the kustomizations of deploy/k8s the way
// `kubectl apply -k` does and decodes every object strictly into its Go
// type, so that tests can check the manifests against the code. The
// manifest tests live here (manifests_test.go: what Kubernetes needs) and in
// cmd/plantstore (manifests_test.go: what the binary needs).
package k8stest

import (
	"fmt"
	"path/filepath"
	"sync"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/plantstore/plantstore/internal/repo"
	"github.com/plantstore/plantstore/modules/plants"
)

// Kustomization is one directory a user (or a test) applies with
// `kubectl apply -k`.
type Kustomization struct {
	Name string // for test names
	Dir  string // relative to the repository root
	// Store is the plant store the variant runs on: plants.StoreBolt or
	// plants.StorePostgres.
	Store string
	// Monitoring is whether components/monitoring is included.
	Monitoring bool
}

// Kustomizations are every variant users apply: the default, the postgres
// overlay, the postgres overlay with its database on CloudNativePG, and the
// first two with the monitoring component (which, being a
// component, renders only as part of a kustomization: testdata holds the
// two that docs/kubernetes.md tells users to write).
var Kustomizations = []Kustomization{
	{Name: "default", Dir: "deploy/k8s", Store: plants.StoreBolt},
	{Name: "postgres", Dir: "deploy/k8s/overlays/postgres", Store: plants.StorePostgres},
	{Name: "cloudnative-pg", Dir: "deploy/k8s/overlays/cloudnative-pg", Store: plants.StorePostgres},
	{Name: "default+monitoring", Dir: "deploy/k8stest/testdata/default-monitoring", Store: plants.StoreBolt, Monitoring: true},
	{Name: "postgres+monitoring", Dir: "deploy/k8stest/testdata/postgres-monitoring", Store: plants.StorePostgres, Monitoring: true},
}

// Render builds the kustomization in dir (relative to the repository root)
// with kustomize's default options, those of `kubectl apply -k`, and
// decodes every object strictly.
func Render(dir string) (*Manifests, error) {
	root, err := repo.Root()
	if err != nil {
		return nil, err
	}
	m := &Manifests{}
	objs, err := RenderJSON(filepath.Join(root, dir))
	if err != nil {
		return nil, err
	}
	for _, data := range objs {
		obj, err := Decode(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		m.Objects = append(m.Objects, obj)
	}
	return m, nil
}

// RenderJSON builds the kustomization in dir (an absolute path) as
// `kubectl apply -k` does and returns each object as JSON, in kustomize's
// order, for a client to apply.
func RenderJSON(dir string) ([][]byte, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resources, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var out [][]byte
	for _, res := range resources.Resources() {
		data, err := res.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", dir, res.CurId(), err)
		}
		out = append(out, data)
	}
	return out, nil
}

// RenderAll renders every kustomization of Kustomizations, by name. It
// renders them once per test binary: callers must not modify the objects.
var RenderAll = sync.OnceValues(func() (map[string]*Manifests, error) {
	all := map[string]*Manifests{}
	for _, k := range Kustomizations {
		m, err := Render(k.Dir)
		if err != nil {
			return nil, err
		}
		all[k.Name] = m
	}
	return all, nil
})
