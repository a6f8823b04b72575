package chaos

import (
	"math/rand"
	"strconv"
	"time"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// actionKind names one chaos action.
type actionKind string

const (
	actCreatePool   actionKind = "create"
	actScalePool    actionKind = "scale"
	actEditVLANs    actionKind = "vlans"
	actRetype       actionKind = "retype"
	actDeletePool   actionKind = "delete"
	actKill         actionKind = "kill"
	actKillOn       actionKind = "kill-on"
	actStart        actionKind = "start"
	actFault        actionKind = "fault"
	actUnfault      actionKind = "unfault"
	actAPIServer    actionKind = "apiserver-restart"
	actDeleteDevice actionKind = "oob-delete"
	actNotReady     actionKind = "notready"
	actReady        actionKind = "ready"
	actServerDown   actionKind = "server-down"
	actDeleteNode   actionKind = "node-delete"
	// actSwitchProject points the default credentials Secret at another
	// project, in place; actRestoreProject points it back.
	actSwitchProject  actionKind = "project-switch"
	actRestoreProject actionKind = "project-restore"
	// actRollout moves a pool to the other plan, a rollout.
	actRollout actionKind = "rollout"
	// actMoveVIP plays kube-vip taking the cluster VIP on another node.
	actMoveVIP actionKind = "vip-host"
)

// Kill triggers: the simulator notification inside which the controller is
// SIGKILLed, before the request that caused it is answered.
const (
	onCreated     = "created"      // a createDevice was stored
	onActive      = "active"       // a device turned active (seen by a read)
	onNetwork     = "network"      // a port call changed an active device
	onUpdated     = "updated"      // the install configuration was put on a device
	onReinstall   = "reinstall"    // the reinstall was accepted
	onDeprovision = "deprovision"  // a delete was accepted
	onVIPUnassign = "vip-unassign" // the VIP left a server: a move between its unassign and assign
)

var killTriggers = []string{onCreated, onActive, onNetwork, onUpdated, onReinstall, onDeprovision, onVIPUnassign}

// vxlanChoices are few, so that pools share VLANs and the garbage collector
// has to tell a VLAN still in use from one that is free.
var vxlanChoices = []int{1000, 1001, 1002, 1003}

var networkTypes = []string{
	equinixv1.NetworkTypeLayer3, equinixv1.NetworkTypeHybrid, equinixv1.NetworkTypeHybridBonded,
	equinixv1.NetworkTypeLayer2Bonded, equinixv1.NetworkTypeLayer2Individual,
}

// metros: the seed's SG in both cases (the API wants lower case) and a
// second metro with VLANs of its own.
var metros = []string{"SG", "sg", "DA"}

// faultOps are the groups of operations a fault targets; nil is every API
// operation.
var faultOps = [][]string{
	nil,
	{metalsim.OpCreateDevice},
	{metalsim.OpCreateDevice, metalsim.OpFindProjectDevices},
	{metalsim.OpFindDeviceByID},
	{metalsim.OpDeleteDevice},
	{metalsim.OpPerformAction, metalsim.OpFindDeviceEvents},
	{metalsim.OpUpdateDevice},
	{metalsim.OpAssignPort, metalsim.OpUnassignPort, metalsim.OpBondPort, metalsim.OpDisbondPort,
		metalsim.OpConvertLayer2, metalsim.OpConvertLayer3},
	{metalsim.OpCreateVirtualNetwork, metalsim.OpFindVirtualNetworks, metalsim.OpDeleteVirtualNetwork},
}

// metalTimeout is the controller's --metal-timeout in the campaign; the long
// latency faults exceed it, so the client gives up while the API still
// applies the request.
const metalTimeout = 3 * time.Second

// poolSpec is what the plan decides about one pool.
type poolSpec struct {
	Name     string
	Count    int
	Metro    string
	Network  string
	VLANs    []int
	BootMode string
	// Remediate sets nodeCleanupWaitInterval (1m), so a node NotReady since
	// long ago is replaced at once.
	Remediate   bool
	MaxAttempts int32
	// Surge and Unavailable are spec.rollout; ProjectB puts the pool in
	// project B through a credentials Secret of its own; Plan, when set,
	// replaces the sample's.
	Surge, Unavailable, Plan string
	ProjectB                 bool
}

// faultSpec is one injected Metal API fault.
type faultSpec struct {
	Kind        metalsim.FaultKind
	Ops         []string
	Probability float64
	Status      int
	Latency     time.Duration
	RetryAfter  time.Duration
	AfterStore  bool
}

// step is one action of a run, after Delay.
type step struct {
	Delay time.Duration
	Kind  actionKind
	// Pool is the whole spec for create and retype, the name and count for
	// scale, the name and VLANs for vlans, the name for delete.
	Pool  poolSpec
	Fault faultSpec
	// FaultOf is the index of the fault step an unfault removes.
	FaultOf int
	Trigger string
	// Down is how many steps the controller stays dead after its trigger
	// fired.
	Down int
	// Pick selects, at run time, the device or node an action hits.
	Pick int
	// Ago back-dates Ready=False for notready.
	Ago time.Duration
	// Graceful restarts the apiserver with SIGTERM, which waits for open
	// watches (about 10s); otherwise it crashes (SIGKILL) and starts again.
	Graceful bool
}

// plan is everything a run does, decided before it starts.
type plan struct {
	Seed         int64
	InstallTime  time.Duration
	ForeignVXLAN int
	Steps        []step
	// Final are the rollout bounds each pool gets for the quiet rollout
	// after the chaos.
	Final map[string][2]string
}

// poolState is the planner's model of a pool.
type poolState struct {
	spec    poolSpec
	created bool
	// placed is set once the pool was first created: a pool made again
	// under the same name stays in the project it was first placed in, as
	// the ledger judges a device's project by its pool's name.
	placed bool
}

type planner struct {
	rng   *rand.Rand
	roll  rolloutPlanner
	seed  int64
	pools []*poolState
	steps []step
	// down: the controller may be dead (killed, or a kill trigger armed).
	down      bool
	downSteps int
	// openFaults maps a fault's step index to the step index it ends at.
	openFaults map[int]int
	apiRestart int
	// switchedUntil is the step the project switch ends at (0: none open).
	switchedUntil int
}

// newPlan decides a whole run from its seed.
func newPlan(seed int64) plan {
	rng := rand.New(rand.NewSource(seed))
	p := &planner{rng: rng, roll: newRolloutPlanner(seed), seed: seed, openFaults: map[int]int{}}
	for i := 0; i < 1+rng.Intn(3); i++ {
		p.pools = append(p.pools, &poolState{spec: poolSpec{Name: poolName(seed, i)}})
	}
	out := plan{
		Seed:         seed,
		InstallTime:  time.Duration(100+rng.Intn(900)) * time.Millisecond,
		ForeignVXLAN: vxlanChoices[rng.Intn(len(vxlanChoices))],
	}
	n := 22 + rng.Intn(14)
	for i := 0; i < n; i++ {
		p.next(i)
	}
	out.Steps, out.Final = p.steps, p.roll.final(p.pools)
	return out
}

func poolName(seed int64, i int) string {
	return runPrefix(seed) + strconv.Itoa(i)
}

// runPrefix starts the name of every pool, Instance and Node of a run.
func runPrefix(seed int64) string {
	return "chaos" + strconv.FormatInt(seed, 10) + "-p"
}

// next appends step i: a due restart or fault removal, or a weighted pick
// among the actions that make sense in the planner's model.
func (p *planner) next(i int) {
	s := step{Delay: time.Duration(50+p.rng.Intn(900)) * time.Millisecond}
	switch {
	case i == 0:
		p.createPool(&s, p.pools[0])
	case p.down && (p.downSteps >= 3 || p.rng.Intn(2) == 0):
		s.Kind = actStart
		p.down, p.downSteps = false, 0
	case p.dueFault(i) >= 0:
		s.Kind, s.FaultOf = actUnfault, p.dueFault(i)
		delete(p.openFaults, s.FaultOf)
	case p.switchedUntil > 0 && p.switchedUntil <= i:
		s.Kind, p.switchedUntil = actRestoreProject, 0
	default:
		p.pick(&s, i)
	}
	if p.down && s.Kind != actStart {
		p.downSteps++
	}
	p.steps = append(p.steps, s)
}

func (p *planner) dueFault(i int) int {
	due := -1
	for at, end := range p.openFaults {
		if end <= i && (due < 0 || at < due) {
			due = at
		}
	}
	return due
}

func (p *planner) createPool(s *step, ps *poolState) {
	s.Kind = actCreatePool
	ps.created = true
	ps.spec.Count = p.rng.Intn(4)
	ps.spec.Metro = metros[p.rng.Intn(len(metros))]
	ps.spec.Remediate = p.rng.Intn(2) == 0
	ps.spec.MaxAttempts = []int32{3, 100}[p.rng.Intn(2)]
	p.template(&ps.spec)
	projectB := ps.spec.ProjectB
	p.roll.create(&ps.spec)
	if ps.placed {
		ps.spec.ProjectB = projectB
	}
	ps.placed = true
	s.Pool = ps.spec
}

// template picks a network type, its VLANs and a boot mode the CRD accepts:
// single-boot only with the layer-3 types.
func (p *planner) template(spec *poolSpec) {
	spec.Network = networkTypes[p.rng.Intn(len(networkTypes))]
	spec.VLANs = nil
	if spec.Network != equinixv1.NetworkTypeLayer3 {
		spec.VLANs = p.vlans()
	}
	spec.BootMode = equinixv1.BootModeReinstall
	switch spec.Network {
	case equinixv1.NetworkTypeLayer3, equinixv1.NetworkTypeHybrid, equinixv1.NetworkTypeHybridBonded:
		if p.rng.Intn(3) == 0 {
			spec.BootMode = equinixv1.BootModeSingleBoot
		}
	}
}

func (p *planner) vlans() []int {
	perm := p.rng.Perm(len(vxlanChoices))
	out := make([]int, 0, 2)
	for _, i := range perm[:1+p.rng.Intn(2)] {
		out = append(out, vxlanChoices[i])
	}
	return out
}

func (p *planner) fault() faultSpec {
	f := faultSpec{Ops: faultOps[p.rng.Intn(len(faultOps))]}
	// A fault on every operation stays rare, or nothing would progress.
	f.Probability = 0.1 + p.rng.Float64()*0.5
	if f.Ops == nil {
		f.Probability = 0.03 + p.rng.Float64()*0.15
	}
	switch p.rng.Intn(7) {
	case 6:
		// Creates refused for as long as the fault lasts: the refusals
		// must be paced, never sent back to back.
		f.Kind, f.Ops, f.Probability = metalsim.FaultNoCapacity, []string{metalsim.OpCreateDevice}, 1
	case 0:
		f.Kind = metalsim.FaultRateLimit
		f.RetryAfter = time.Duration(1+p.rng.Intn(2)) * time.Second
	case 1:
		f.Kind = metalsim.FaultServerError
		f.Status = []int{500, 502, 503, 504}[p.rng.Intn(4)]
	case 2:
		f.Kind, f.AfterStore = metalsim.FaultServerError, true
		f.Status = []int{500, 502, 503, 504}[p.rng.Intn(4)]
	case 3:
		f.Kind = metalsim.FaultLatency
		f.Probability = 0.2 + p.rng.Float64()*0.8
		f.Latency = time.Duration(20+p.rng.Intn(980)) * time.Millisecond
		if f.Ops == nil {
			f.Latency /= 4
		} else if p.rng.Intn(4) == 0 {
			f.Latency = metalTimeout + 500*time.Millisecond
		}
	case 4:
		f.Kind = metalsim.FaultDropConnection
	default:
		f.Kind, f.AfterStore = metalsim.FaultDropConnection, true
	}
	return f
}
