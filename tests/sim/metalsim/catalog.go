package metalsim

import (
	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

// The catalog is fixed reference data (metros, plans, operating systems).
// Functions build fresh structs on every call so no caller can mutate shared
// state.

type metroInfo struct {
	id, code, name, country string
	// facilities are the metro's data centres; devices are spread over
	// them in turn (which one a real device landed in was the API's
	// choice, inferred here).
	facilities []facilityInfo
}

type facilityInfo struct {
	id, code, name string
	metro          *metroInfo
}

// fac builds the facilities of a metro; they point back to it once the
// catalog is complete (see init).
func fac(idCodeName ...string) []facilityInfo {
	var out []facilityInfo
	for i := 0; i+2 < len(idCodeName); i += 3 {
		out = append(out, facilityInfo{id: idCodeName[i], code: idCodeName[i+1], name: idCodeName[i+2]})
	}
	return out
}

// catalogMetros are metros of the real service with facility codes it
// listed.
var catalogMetros = []metroInfo{
	{"108b2cfb-246b-45e3-885a-bf3e82fce1a0", "da", "Dallas", "US", fac(
		"6d1a6ba0-8a6a-4f4e-b7b1-1b2b7d1a4c11", "da11", "Dallas DA11",
		"b3f1c0a2-6e0d-4b8c-9a51-2c7d8e9f0a06", "da6", "Dallas DA6")},
	{"d3d6b29f-042d-43b7-b3ce-0bf53d5754ca", "dc", "Washington DC", "US", fac(
		"0f6c1cc0-5a2f-4d84-9d1c-6b7a7f2e5d13", "dc13", "Ashburn DC13",
		"1a7d2dd1-6b3f-4e95-8e2d-7c8b8f3f6e10", "dc10", "Ashburn DC10")},
	{"2991b022-b8c4-497e-8db7-5a407c3a209b", "sv", "Silicon Valley", "US", fac(
		"a0f1d9e0-7c4b-4a8e-9a57-61f1c3d2b215", "sv15", "Silicon Valley SV15",
		"b1e2eaf1-8d5c-4b9f-8b68-72e2d4e3c316", "sv16", "Silicon Valley SV16")},
	{"96a57b6d-c62c-41b5-ab8e-f8d63a7f9887", "ny", "New York", "US", fac(
		"c6a0a7b4-3f4e-4c7e-a8e0-4d0b7b3a9e05", "ny5", "New York NY5",
		"d7b1b8c5-4a5f-4d8f-b9f1-5e1c8c4b0f07", "ny7", "New York NY7")},
	{"60666d92-e00f-43a8-a9f8-fddf665390ca", "ch", "Chicago", "US", fac(
		"4e6ab1e4-6f0b-4b8e-94f7-3a0b2c1d9e03", "ch3", "Chicago CH3")},
	{"f2f0f0c9-3a0f-4c4d-a1d4-2f1e5b9e8a01", "am", "Amsterdam", "NL", fac(
		"8e6470b3-b75e-47d1-bb93-45b225750975", "am6", "Amsterdam AM6")},
	{"f50f8d1b-7ad6-4b46-9d0c-6c0cb3ad2d12", "fr", "Frankfurt", "DE", fac(
		"e1e9c52e-a0bc-4117-b996-0fc94843ea09", "fr2", "Frankfurt FR2",
		"f2fad63f-b1cd-4228-8aa7-1ad95954fb18", "fr8", "Frankfurt FR8")},
	{"5f72cbf6-96e4-44f2-ae60-213888fa2b9f", "sg", "Singapore", "SG", fac(
		"2e2c4d0b-6c7e-4a0b-8f1e-5d3c2b1a0f01", "sg1", "Singapore SG1",
		"3f3d5e1c-7d8f-4b1c-9f2f-6e4d3c2b1a04", "sg4", "Singapore SG4")},
	{"b3ba8b0f-2c70-4c8f-8b4f-5a3e1c9a7d11", "ty", "Tokyo", "JP", fac(
		"7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e11", "ty11", "Tokyo TY11")},
	{"c7e2a1f0-9b8d-4e6c-a5f4-3d2c1b0a9e05", "sy", "Sydney", "AU", fac(
		"9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c05", "sy5", "Sydney SY5",
		"0b9c8d7e-6f5a-4b4c-8d3e-2f1a0b9c8d04", "sy4", "Sydney SY4")},
}

func init() {
	for i := range catalogMetros {
		m := &catalogMetros[i]
		for j := range m.facilities {
			m.facilities[j].metro = m
		}
	}
}

func findMetro(codeOrID string) (metroInfo, bool) {
	for _, m := range catalogMetros {
		if m.code == codeOrID || m.id == codeOrID {
			return m, true
		}
	}
	return metroInfo{}, false
}

// findFacility finds a facility by code or ID.
func findFacility(codeOrID string) (facilityInfo, bool) {
	for _, m := range catalogMetros {
		for _, f := range m.facilities {
			if f.code == codeOrID || f.id == codeOrID {
				return f, true
			}
		}
	}
	return facilityInfo{}, false
}

func metroHref(m metroInfo) string { return apiPrefix + "/locations/metros/" + m.id }

func (m metroInfo) deviceMetro() *metalv1.DeviceMetro {
	return &metalv1.DeviceMetro{Id: ptr(m.id), Code: ptr(m.code), Name: ptr(m.name), Country: ptr(m.country)}
}

func (m metroInfo) metro() metalv1.Metro {
	return metalv1.Metro{Id: ptr(m.id), Code: ptr(m.code), Name: ptr(m.name), Country: ptr(m.country)}
}

func facilityHref(f facilityInfo) string { return apiPrefix + "/facilities/" + f.id }

func (f facilityInfo) facility() *metalv1.Facility {
	return &metalv1.Facility{
		Id:       ptr(f.id),
		Code:     ptr(f.code),
		Name:     ptr(f.name),
		Metro:    f.metro.deviceMetro(),
		Features: []metalv1.FacilityFeaturesInner{metalv1.FACILITYFEATURESINNER_BAREMETAL, metalv1.FACILITYFEATURESINNER_LAYER_2},
		AdditionalProperties: map[string]interface{}{
			"href": facilityHref(f),
		},
	}
}

type cpuSpec struct {
	count int32
	kind  string
}

type driveSpec struct {
	count      int32
	kind, size string
	category   string
}

type planInfo struct {
	id, slug, name, description string
	categories                  []string
	cpus                        []cpuSpec
	memory                      string
	drives                      []driveSpec
	nicCount                    int32
	nicSpeed                    string
	hourly                      float64
}

// catalogPlans carries the published specifications of the current
// generation; nicCount decides how many eth ports (and bonds) a device gets.
var catalogPlans = []planInfo{
	{
		id: "e69c0169-4726-46ea-98f1-939c9e8a3607", slug: "c3.small.x86", name: "c3.small.x86",
		description: "c3.small.x86 - 1x Intel Xeon E-2278G, 32GB RAM, 2x 480GB SSD, 2x 10Gbps",
		categories:  []string{"compute", "current_gen"},
		cpus:        []cpuSpec{{1, "Intel Xeon E-2278G 8-Core Processor @ 3.40GHz"}},
		memory:      "32GB",
		drives:      []driveSpec{{2, "SSD", "480GB", "boot"}},
		nicCount:    2, nicSpeed: "10Gbps", hourly: 0.75,
	},
	{
		id: "3bc8a214-b807-4ba4-b2a9-37c5b1a9a4f1", slug: "c3.medium.x86", name: "c3.medium.x86",
		description: "c3.medium.x86 - 1x AMD EPYC 7402P, 64GB RAM, 2x 240GB SSD, 2x 480GB SSD, 2x 25Gbps",
		categories:  []string{"compute", "current_gen"},
		cpus:        []cpuSpec{{1, "AMD EPYC 7402P 24-Core Processor @ 2.8GHz"}},
		memory:      "64GB",
		drives:      []driveSpec{{2, "SSD", "240GB", "boot"}, {2, "SSD", "480GB", "storage"}},
		nicCount:    2, nicSpeed: "25Gbps", hourly: 1.50,
	},
	{
		id: "8a6ec8a0-0ea1-4e3a-8d6d-1f0c3a5b7e11", slug: "m3.small.x86", name: "m3.small.x86",
		description: "m3.small.x86 - 1x Intel Xeon E-2378G, 64GB RAM, 2x 480GB SSD, 2x 25Gbps",
		categories:  []string{"compute", "current_gen"},
		cpus:        []cpuSpec{{1, "Intel Xeon E-2378G 8-Core Processor @ 2.80GHz"}},
		memory:      "64GB",
		drives:      []driveSpec{{2, "SSD", "480GB", "boot"}},
		nicCount:    2, nicSpeed: "25Gbps", hourly: 1.05,
	},
	{
		id: "4fb1ee8e-6c3b-47ea-9ffe-1f6d0ae0e6f3", slug: "m3.large.x86", name: "m3.large.x86",
		description: "m3.large.x86 - 1x AMD EPYC 7502P, 256GB RAM, 2x 240GB SSD, 2x 3.8TB NVMe, 2x 25Gbps",
		categories:  []string{"compute", "current_gen"},
		cpus:        []cpuSpec{{1, "AMD EPYC 7502P 32-Core Processor @ 2.5GHz"}},
		memory:      "256GB",
		drives:      []driveSpec{{2, "SSD", "240GB", "boot"}, {2, "NVME", "3.8TB", "storage"}},
		nicCount:    2, nicSpeed: "25Gbps", hourly: 3.10,
	},
	{
		id: "0b7e4d5c-3b2a-4f19-8e6d-5c4b3a2f1e0d", slug: "n3.xlarge.x86", name: "n3.xlarge.x86",
		description: "n3.xlarge.x86 - 2x Intel Xeon Gold 6314U, 512GB RAM, 2x 240GB SSD, 2x 3.8TB NVMe, 4x 25Gbps",
		categories:  []string{"compute", "current_gen"},
		cpus:        []cpuSpec{{2, "Intel Xeon Gold 6314U 32-Core Processor @ 2.30GHz"}},
		memory:      "512GB",
		drives:      []driveSpec{{2, "SSD", "240GB", "boot"}, {2, "NVME", "3.8TB", "storage"}},
		nicCount:    4, nicSpeed: "25Gbps", hourly: 4.50,
	},
	{
		id: "9c1f6e2d-8a7b-4c5d-9e3f-2a1b0c9d8e7f", slug: "s3.xlarge.x86", name: "s3.xlarge.x86",
		description: "s3.xlarge.x86 - 2x Intel Xeon Silver 4214, 192GB RAM, 2x 960GB SSD, 12x 8TB HDD, 2x 256GB NVMe, 2x 25Gbps",
		categories:  []string{"storage", "current_gen"},
		cpus:        []cpuSpec{{2, "Intel Xeon Silver 4214 12-Core Processor @ 2.20GHz"}},
		memory:      "192GB",
		drives: []driveSpec{
			{2, "SSD", "960GB", "boot"}, {12, "HDD", "8TB", "storage"}, {2, "NVME", "256GB", "cache"},
		},
		nicCount: 2, nicSpeed: "25Gbps", hourly: 2.95,
	},
}

func findPlan(slugOrID string) (planInfo, bool) {
	for _, p := range catalogPlans {
		if p.slug == slugOrID || p.id == slugOrID {
			return p, true
		}
	}
	return planInfo{}, false
}

func planHref(p planInfo) string { return apiPrefix + "/plans/" + p.id }

func (p planInfo) plan() metalv1.Plan {
	specs := &metalv1.PlanSpecs{
		Memory: &metalv1.PlanSpecsMemory{Total: ptr(p.memory)},
		Nics:   []metalv1.PlanSpecsNicsInner{{Count: ptr(p.nicCount), Type: ptr(p.nicSpeed)}},
		Features: &metalv1.PlanSpecsFeatures{
			Raid: ptr(true), Txt: ptr(true), Uefi: ptr(true),
		},
	}
	for _, c := range p.cpus {
		specs.Cpus = append(specs.Cpus, metalv1.PlanSpecsCpusInner{Count: ptr(c.count), Type: ptr(c.kind)})
	}
	for _, d := range p.drives {
		specs.Drives = append(specs.Drives, metalv1.PlanSpecsDrivesInner{
			Count: ptr(d.count), Type: ptr(d.kind), Size: ptr(d.size), Category: ptr(d.category),
		})
	}
	plan := metalv1.Plan{
		Id:          ptr(p.id),
		Slug:        ptr(p.slug),
		Name:        ptr(p.name),
		Description: ptr(p.description),
		Class:       ptr(p.slug),
		Line:        ptr("baremetal"),
		Legacy:      ptr(false),
		Type:        ptr(metalv1.PLANTYPE_STANDARD),
		Categories:  append([]string(nil), p.categories...),
		DeploymentTypes: []metalv1.PlanDeploymentTypesInner{
			metalv1.PLANDEPLOYMENTTYPESINNER_ON_DEMAND, metalv1.PLANDEPLOYMENTTYPESINNER_SPOT_MARKET,
		},
		Pricing: map[string]interface{}{"hour": p.hourly},
		Specs:   specs,
		AdditionalProperties: map[string]interface{}{
			"href": planHref(p),
		},
	}
	for _, m := range catalogMetros {
		plan.AvailableInMetros = append(plan.AvailableInMetros, metalv1.PlanAvailableInMetrosInner{
			Href:  ptr(metroHref(m)),
			Price: &metalv1.PlanAvailableInInnerPrice{Hour: ptr(p.hourly)},
		})
	}
	return plan
}

type osInfo struct {
	id, slug, name, distro, version string
}

// OSCustomIPXE is the operating system slug that boots a user-supplied iPXE
// script instead of installing an OS.
const OSCustomIPXE = "custom_ipxe"

var catalogOS = []osInfo{
	{"a3729923-fdc4-4e85-a972-aafbad3695db", OSCustomIPXE, "Custom iPXE", "custom_ipxe", ""},
	{"ab2ea4c3-3b52-4a1f-9ffb-1c1b3a1c6a01", "ubuntu_22_04", "Ubuntu 22.04 LTS", "ubuntu", "22.04"},
	{"c1d7b8e2-2f6a-4f51-8a3a-7f0e9c2b6a02", "ubuntu_24_04", "Ubuntu 24.04 LTS", "ubuntu", "24.04"},
	{"d2e8c9f3-3a7b-4a62-9b4b-8a1f0d3c7b03", "debian_12", "Debian 12", "debian", "12"},
	{"e3f9d0a4-4b8c-4b73-8c5c-9b2a1e4d8c04", "rocky_9", "Rocky Linux 9", "rocky", "9"},
	{"f4a0e1b5-5c9d-4c84-9d6d-0c3b2f5e9d05", "alma_9", "AlmaLinux 9", "alma", "9"},
	{"05b1f2c6-6d0e-4d95-8e7e-1d4c3a6f0e06", "flatcar_stable", "Flatcar (stable)", "flatcar", "stable"},
}

func findOS(slug string) (osInfo, bool) {
	for _, o := range catalogOS {
		if o.slug == slug {
			return o, true
		}
	}
	return osInfo{}, false
}

func (o osInfo) operatingSystem() *metalv1.OperatingSystem {
	os := &metalv1.OperatingSystem{
		Id:             ptr(o.id),
		Slug:           ptr(o.slug),
		Name:           ptr(o.name),
		Distro:         ptr(o.distro),
		Version:        ptr(o.version),
		Preinstallable: ptr(false),
		Licensed:       ptr(false),
	}
	for _, p := range catalogPlans {
		os.ProvisionableOn = append(os.ProvisionableOn, p.slug)
	}
	return os
}

func ptr[T any](v T) *T { return &v }
