// bundle-validate checks bundle/ (made by `make bundle`) the way
// `operator-sdk bundle validate ./bundle --select-optional suite=operatorframework`
// does, with the same validators from github.com/operator-framework/api, without
// building operator-sdk (and its many dependencies) on every machine that runs
// `make test`:
//
//   - the bundle format: metadata/annotations.yaml with the registry+v1 keys and
//     bundle.Dockerfile labelling the image with exactly those annotations;
//   - the default validators (ClusterServiceVersion, CustomResourceDefinition, Bundle);
//   - the OperatorHub suite: OperatorHubV2, StandardCapabilities and
//     StandardCategories (what the deprecated OperatorHubValidator ran), plus
//     GoodPractices and AlphaDeprecatedAPIs against the Kubernetes version given.
//
// Errors and warnings both fail: the bundle is generated, so a warning is a
// defect of the generator, not something to live with.
//
// Usage: bundle-validate -k8s-version 1.36 <bundle dir>
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	apimanifests "github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	"sigs.k8s.io/yaml"
)

// The keys operator-registry requires in a registry+v1 bundle's annotations.
var requiredAnnotations = []string{
	"operators.operatorframework.io.bundle.mediatype.v1",
	"operators.operatorframework.io.bundle.manifests.v1",
	"operators.operatorframework.io.bundle.metadata.v1",
	"operators.operatorframework.io.bundle.package.v1",
	"operators.operatorframework.io.bundle.channels.v1",
}

func main() {
	k8sVersion := flag.String("k8s-version", "", "Kubernetes version the deprecated-API checks assume (e.g. 1.36)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: bundle-validate [-k8s-version X.Y] <bundle dir>")
		os.Exit(2)
	}
	dir := flag.Arg(0)

	problems := checkFormat(dir)

	bundle, err := apimanifests.GetBundleFromDir(filepath.Join(dir, "manifests"))
	if err != nil || bundle == nil {
		problems = append(problems, fmt.Sprintf("ERROR loading %s/manifests: %v", dir, err))
		report(problems)
	}
	// The package and channels come from the annotations, as operator-registry reads them.
	annotations, _ := readAnnotations(dir)
	bundle.Package = annotations["operators.operatorframework.io.bundle.package.v1"]
	bundle.Channels = strings.Split(annotations["operators.operatorframework.io.bundle.channels.v1"], ",")
	bundle.DefaultChannel = annotations["operators.operatorframework.io.bundle.channel.default.v1"]

	objs := bundle.ObjectsToValidate()
	for _, obj := range bundle.Objects {
		objs = append(objs, obj)
	}
	objs = append(objs, map[string]string{"k8s-version": *k8sVersion})

	validators := validation.DefaultBundleValidators.WithValidators(
		validation.OperatorHubV2Validator,
		validation.StandardCapabilitiesValidator,
		validation.StandardCategoriesValidator,
		validation.GoodPracticesValidator,
		validation.AlphaDeprecatedAPIsValidator,
	)
	for _, result := range validators.Validate(objs...) {
		for _, e := range result.Errors {
			problems = append(problems, "ERROR "+e.Error())
		}
		for _, w := range result.Warnings {
			problems = append(problems, "WARNING "+w.Error())
		}
	}
	report(problems)
	fmt.Printf("%s: valid (default validators and the operatorframework suite, Kubernetes %s)\n", dir, *k8sVersion)
}

func report(problems []string) {
	if len(problems) == 0 {
		return
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, p)
	}
	os.Exit(1)
}

func readAnnotations(dir string) (map[string]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml"))
	if err != nil {
		return nil, err
	}
	var file struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.UnmarshalStrict(data, &file); err != nil {
		return nil, err
	}
	return file.Annotations, nil
}

// checkFormat: the part of operator-sdk's check that comes from operator-registry
// (the bundle image's layout), which the api module does not carry.
func checkFormat(dir string) (problems []string) {
	annotations, err := readAnnotations(dir)
	if err != nil {
		return []string{"ERROR metadata/annotations.yaml: " + err.Error()}
	}
	for _, key := range requiredAnnotations {
		if annotations[key] == "" {
			problems = append(problems, "ERROR metadata/annotations.yaml: missing "+key)
		}
	}
	if m := annotations["operators.operatorframework.io.bundle.mediatype.v1"]; m != "" && m != "registry+v1" {
		problems = append(problems, "ERROR metadata/annotations.yaml: mediatype "+m+" is not registry+v1")
	}
	for key, folder := range map[string]string{
		"operators.operatorframework.io.bundle.manifests.v1": "manifests",
		"operators.operatorframework.io.bundle.metadata.v1":  "metadata",
	} {
		if v := annotations[key]; v != "" && strings.TrimSuffix(v, "/") != folder {
			problems = append(problems, fmt.Sprintf("ERROR metadata/annotations.yaml: %s is %q, the bundle has %s/", key, v, folder))
		}
	}
	if d := annotations["operators.operatorframework.io.bundle.channel.default.v1"]; d != "" {
		found := false
		for _, c := range strings.Split(annotations["operators.operatorframework.io.bundle.channels.v1"], ",") {
			found = found || c == d
		}
		if !found {
			problems = append(problems, "ERROR metadata/annotations.yaml: the default channel "+d+" is not one of the channels")
		}
	}

	labels, err := dockerfileLabels(filepath.Join(dir, "bundle.Dockerfile"))
	if err != nil {
		return append(problems, "ERROR bundle.Dockerfile: "+err.Error())
	}
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if labels[k] != annotations[k] {
			problems = append(problems, fmt.Sprintf("ERROR bundle.Dockerfile: LABEL %s=%q, metadata/annotations.yaml says %q", k, labels[k], annotations[k]))
		}
	}
	return problems
}

// dockerfileLabels reads the `LABEL key=value` lines (one label a line, as `make bundle` writes them).
func dockerfileLabels(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	labels := map[string]string{}
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if !strings.HasPrefix(line, "LABEL ") {
			continue
		}
		key, value, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "LABEL ")), "=")
		if !ok {
			return nil, fmt.Errorf("LABEL without a value: %s", line)
		}
		labels[key] = strings.Trim(value, `"`)
	}
	return labels, scanner.Err()
}
