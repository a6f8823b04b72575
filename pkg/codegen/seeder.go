package main

import "fmt"

// seederSchemas gives the Inventory CRD Seeder's conditions (see
// seederConditions); the AddressPool CRD is Seeder's as generated.
func seederSchemas(crd map[string]interface{}) error {
	if dig(crd, "spec", "names", "kind") != "Inventory" {
		return nil
	}
	return seederConditions(crd)
}

// seederConditions gives the Inventory's status.conditions items Seeder's
// schema (every field a plain string, lastUpdateTime included, only type and
// status required) plus observedGeneration, instead of metav1.Condition's
// stricter one: Seeder writes conditions with an empty reason and
// lastUpdateTime, which metav1.Condition's schema would refuse or prune, and
// an Inventory Seeder wrote must stay valid under the addon's CRD. The
// metav1.Condition JSON the addon writes fits this schema.
func seederConditions(crd map[string]interface{}) error {
	versions, _ := dig(crd, "spec", "versions").([]interface{})
	if len(versions) == 0 {
		return fmt.Errorf("no versions")
	}
	for _, v := range versions {
		conditions, _ := dig(v, "schema", "openAPIV3Schema", "properties", "status", "properties", "conditions").(map[string]interface{})
		if conditions == nil {
			return fmt.Errorf("no status.conditions")
		}
		str := func() map[string]interface{} { return map[string]interface{}{"type": "string"} }
		conditions["items"] = map[string]interface{}{
			"type":     "object",
			"required": []interface{}{"status", "type"},
			"properties": map[string]interface{}{
				"type":               str(),
				"status":             str(),
				"reason":             str(),
				"message":            str(),
				"lastTransitionTime": str(),
				"lastUpdateTime":     str(),
				"observedGeneration": map[string]interface{}{"type": "integer", "format": "int64"},
			},
		}
		delete(conditions, "x-kubernetes-list-type")
		delete(conditions, "x-kubernetes-list-map-keys")
	}
	return nil
}

// dig walks nested maps by key.
func dig(obj interface{}, keys ...string) interface{} {
	for _, k := range keys {
		m, ok := obj.(map[string]interface{})
		if !ok {
			return nil
		}
		obj = m[k]
	}
	return obj
}
