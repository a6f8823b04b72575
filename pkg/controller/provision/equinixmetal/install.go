package equinixmetal

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/joininfo"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
)

// installInputs is what the installer needs, from the pool, the cluster and the
// device.
type installInputs struct {
	config    harvester.JoinConfigInput
	scriptURL string
	version   string
}

// installInputs gathers the join configuration. dev is nil before the device
// exists (single-boot, or the pre-create check). It returns ok=false after
// recording on the InstallConfigured condition what is missing.
func (r *run) installInputs(dev *metal.Device) (installInputs, bool, error) {
	spec := &r.Obj.Spec
	join, err := r.p.joinInfo.Join()
	if err != nil {
		return installInputs{}, false, r.joinInfoFailure(err)
	}
	version, err := r.p.joinInfo.Version(spec.HarvesterVersion)
	if err != nil {
		return installInputs{}, false, r.joinInfoFailure(err)
	}
	vlan, err := harvester.ManagementVLANID(spec.InstanceTemplate)
	if err != nil {
		return installInputs{}, false, r.configFailure(err)
	}
	in := installInputs{version: version}
	in.config = harvester.JoinConfigInput{
		ServerURL:     join.ServerURL,
		Token:         join.Token,
		Hostname:      r.Obj.Name,
		SSHKeys:       spec.SSHKeys,
		SingleBoot:    spec.BootMode == equinixv1.BootModeSingleBoot,
		BondOptions:   spec.ManagementBondingOptions,
		VLANID:        vlan,
		InstallDevice: spec.InstallDevice,
		ISOURL:        spec.ISOURL,
		Labels:        map[string]string{equinixv1.LabelPool: spec.PoolName},
		BGPPeerRoutes: r.p.settings.BGP && vlan == 0,
	}
	if in.config.ISOURL, err = harvester.ISOURL(version, spec.ISOURL); err != nil {
		return installInputs{}, false, r.joinInfoFailure(&joininfo.Error{Reason: equinixv1.ReasonVersionUnknown, Message: err.Error()})
	}
	if in.scriptURL, err = r.scriptURL(version); err != nil {
		return installInputs{}, false, r.joinInfoFailure(err)
	}
	if dev == nil {
		if r.releaseMissing(in.config.ISOURL, version) || r.installDiskRefused(version) {
			return installInputs{}, false, nil
		}
		// Before any paid server exists, the console Secret must be ours:
		// a name taken by someone else's Secret stops here, not after.
		hash, ok, err := r.ConsolePassword()
		if err != nil || !ok {
			return installInputs{}, false, err
		}
		if in.config.SingleBoot {
			in.config.PasswordHash = hash
		}
		return in, true, nil
	}
	macs, missing := managementMACs(dev, spec.ManagementInterface)
	if missing != "" {
		r.SetCondition(equinixv1.InstanceInstallConfigured, metav1.ConditionFalse, equinixv1.ReasonPortMissing,
			fmt.Sprintf("device %s reports no MAC address for %s, a managementInterface of the pool; check the plan's ports", dev.ID, missing))
		r.Poll()
		return installInputs{}, false, nil
	}
	in.config.MACs = macs
	hash, ok, err := r.ConsolePassword()
	if err != nil || !ok {
		return installInputs{}, false, err
	}
	in.config.PasswordHash = hash
	return in, true, nil
}

// releaseRecheck is how often a missing release is looked for again; a
// pool edit brings the Instance back at once.
const releaseRecheck = 10 * time.Minute

// releaseMissing asks, before a paid server is created, whether the ISO it
// would install exists. Only a definite "not there" stops the create: a
// check that cannot be answered (no route out, a 5xx) lets it go on, since
// the servers may well reach what the controller cannot.
func (r *run) releaseMissing(isoURL, version string) bool {
	if r.p.releases == nil {
		return false
	}
	err := r.p.releases.Check(r.p.ctx, isoURL)
	if errors.Is(err, harvester.ErrReleaseMissing) {
		r.holdCreate(equinixv1.ReasonReleaseNotFound, fmt.Sprintf(
			"the installer ISO of Harvester %s is not there (%v), so no server is created to install it: set spec.harvesterVersion (or spec.isoURL) of the pool to a published release",
			version, err), releaseRecheck)
		return true
	}
	if err != nil {
		logrus.Debugf("instance %s: could not check the installer ISO %s, going on: %v", r.Obj.Name, isoURL, err)
	}
	return false
}

func (r *run) scriptURL(version string) (string, error) {
	if u := r.Obj.Spec.IPXEScriptURL; u != "" {
		return u, nil
	}
	base, err := r.p.joinInfo.IPXEBaseURL()
	if err != nil {
		return "", err
	}
	u, err := harvester.InstallerScriptURL(base, version, r.Obj.Spec.BootMode, r.Obj.Spec.ManagementBondingOptions)
	if err != nil {
		return "", &joininfo.Error{Reason: equinixv1.ReasonIPXEURLMissing, Message: err.Error()}
	}
	return u, nil
}

func managementMACs(dev *metal.Device, ports []string) ([]string, string) {
	all := dev.MACs()
	macs := make([]string, 0, len(ports))
	for _, p := range ports {
		mac := all[p]
		if mac == "" {
			return nil, p
		}
		macs = append(macs, mac)
	}
	return macs, ""
}

// joinInfoFailure records what the install is waiting for. Missing join
// information is fixed by a person; the watches on Secrets, ConfigMaps and
// Settings bring the Instance back when it appears.
func (r *run) joinInfoFailure(err error) error {
	if e, ok := joininfo.AsError(err); ok {
		r.SetCondition(equinixv1.InstanceInstallConfigured, metav1.ConditionFalse, e.Reason, e.Message)
		if r.Obj.Status.InstanceID == "" {
			r.SetPhase(equinixv1.PhasePending)
		}
		return nil
	}
	return err
}

func (r *run) configFailure(err error) error {
	r.SetCondition(equinixv1.InstanceInstallConfigured, metav1.ConditionFalse, equinixv1.ReasonInvalidConfiguration,
		fmt.Sprintf("cannot render the Harvester join configuration: %v", err))
	r.Requeue(invalidRetry)
	return nil
}

// ensureInstall puts the installer on the device and reinstalls it, once. It
// reports whether the installer has been started.
func (r *run) ensureInstall(client metal.Client, dev *metal.Device) (bool, error) {
	st := r.Obj.Status
	if conditions.IsTrue(st.Conditions, equinixv1.InstanceInstalling) {
		if st.InstallRequestedAt == nil || r.Obj.Spec.BootMode == equinixv1.BootModeSingleBoot ||
			r.p.reinstalls.answered(r.Obj.UID, st.InstallRequestedAt.Time) {
			return true, nil
		}
		// The reinstall's intent was stored with the state it leads to;
		// whether the call went out is known to the process that sent it,
		// and after a restart only to the API.
		return r.reinstallOnce(client, dev)
	}
	r.SetPhase(equinixv1.PhaseInstalling)
	if !conditions.IsTrue(r.Obj.Status.Conditions, equinixv1.InstanceInstallConfigured) {
		if ok, err := r.configureInstall(client, dev); err != nil || !ok {
			return false, err
		}
	}
	return r.reinstallOnce(client, dev)
}

func (r *run) configureInstall(client metal.Client, dev *metal.Device) (bool, error) {
	in, ok, err := r.installInputs(dev)
	if err != nil || !ok {
		return false, err
	}
	cfg, err := harvester.RenderJoinConfig(in.config)
	if err != nil {
		return false, r.configFailure(err)
	}
	userdata := redact.Sensitive(cfg)
	alwaysPXE := false
	if _, err := client.UpdateDevice(r.p.ctx, dev.ID, metal.DeviceUpdate{
		IPXEScriptURL: &in.scriptURL, Userdata: &userdata, AlwaysPXE: &alwaysPXE,
	}); err != nil {
		return false, r.metalFailure("setting the installer on the device", equinixv1.InstanceInstallConfigured, err)
	}
	r.Obj.Status.HarvesterVersion = in.version
	r.SetCondition(equinixv1.InstanceInstallConfigured, metav1.ConditionTrue, equinixv1.ReasonInstallConfigured,
		fmt.Sprintf("installer iPXE script %s and a join configuration for Harvester %s (management MACs %s) are on device %s",
			in.scriptURL, in.version, strings.Join(in.config.MACs, ", "), dev.ID))
	return true, nil
}

// reinstallOnce sends the reinstall unless one was already sent. The intent is
// stored before the call, together with the state the call leads to (the
// installer started, the node awaited), so that an answered call needs no
// write of its own; a process that did not see the answer (it crashed, or
// restarted) asks the device (state, then events) whether the call went
// through before another is sent.
func (r *run) reinstallOnce(client metal.Client, dev *metal.Device) (bool, error) {
	if at := r.Obj.Status.InstallRequestedAt; at != nil {
		sent, err := r.reinstallWasSent(client, dev)
		if err != nil || sent {
			if sent {
				r.p.reinstalls.answer(r.Obj.UID, at.Time)
			}
			return sent, err
		}
	} else {
		at := r.NowTime()
		r.markInstallStarted(*at, fmt.Sprintf("reinstalling device %s with the Harvester %s installer", dev.ID, r.installVersion()))
		if err := r.TrackNode(); err != nil {
			return false, err
		}
		if err := r.Persist(); err != nil {
			return false, err
		}
	}
	scriptURL, err := r.scriptURL(r.installVersion())
	if err != nil {
		return false, r.joinInfoFailure(err)
	}
	err = client.Reinstall(r.p.ctx, dev.ID, metal.ReinstallRequest{
		OperatingSystem: "custom_ipxe",
		IPXEScriptURL:   scriptURL,
		// Both set skips Equinix's slow disk wipe; the Harvester installer
		// repartitions the disk itself.
		PreserveData:    true,
		DeprovisionFast: true,
	})
	if err != nil {
		return false, r.metalFailure("reinstalling the device with the Harvester installer", equinixv1.InstanceInstalling, err)
	}
	r.p.reinstalls.answer(r.Obj.UID, r.Obj.Status.InstallRequestedAt.Time)
	r.markInstallStarted(*r.Obj.Status.InstallRequestedAt,
		fmt.Sprintf("reinstalling device %s with the Harvester %s installer", dev.ID, r.installVersion()))
	r.Poll()
	return true, nil
}

func (r *run) installVersion() string {
	if v := r.Obj.Status.HarvesterVersion; v != "" {
		return v
	}
	return r.Obj.Spec.HarvesterVersion
}

// clockSkew tolerates the Metal API's clock running behind ours when event
// times are compared with what we recorded.
const clockSkew = time.Minute

func (r *run) reinstallWasSent(client metal.Client, dev *metal.Device) (bool, error) {
	if dev.State == metal.DeviceStateReinstalling {
		r.markInstallStarted(*r.Obj.Status.InstallRequestedAt, fmt.Sprintf("device %s is reinstalling with the Harvester installer", dev.ID))
		return true, nil
	}
	events, err := client.ListDeviceEvents(r.p.ctx, dev.ID)
	if err != nil {
		return false, r.metalFailure("reading device events", equinixv1.InstanceInstalling, err)
	}
	since := r.Obj.Status.InstallRequestedAt.Time
	for _, ev := range events {
		if strings.Contains(strings.ToLower(ev.Type), "reinstall") && !ev.CreatedAt.Before(since.Add(-clockSkew)) {
			r.markInstallStarted(*r.Obj.Status.InstallRequestedAt, fmt.Sprintf("device %s was reinstalled with the Harvester installer", dev.ID))
			return true, nil
		}
	}
	return false, nil
}

func (r *run) markInstallStarted(at metav1.Time, message string) {
	r.Obj.Status.InstallRequestedAt = &at
	r.SetPhase(equinixv1.PhaseInstalling)
	conditions.True(&r.Obj.Status.Conditions, r.Obj.Generation, equinixv1.InstanceInstallConfigured, equinixv1.ReasonInstallConfigured, "the installer and join configuration are on the device")
	r.SetCondition(equinixv1.InstanceInstalling, metav1.ConditionTrue, equinixv1.ReasonInstallStarted, message)
}
