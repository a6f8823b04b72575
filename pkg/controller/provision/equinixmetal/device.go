package equinixmetal

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
)

// ensureDevice finds the Instance's device by its tags, or creates it. It
// never creates when a device is already tagged for this Instance: a create
// that failed in transit may have been stored, and the next pass adopts it.
// It reports whether the Instance now has a device.
func (r *run) ensureDevice(client metal.Client) (bool, error) {
	if left := waitLeft(r.Obj.Status.CreateRetry, r.Now()); left > 0 {
		// The last create was refused, so nothing was stored: the list
		// before the next create waits with it. Without this, the status
		// write recording the refusal re-ran the Instance at once, and
		// refused creates went out back to back.
		r.Requeue(left)
		return false, nil
	}
	devs, err := r.devicesToAdopt(client)
	if err != nil {
		return false, r.metalFailure("listing devices to adopt", equinixv1.InstanceDeviceCreated, err)
	}
	r.credentialsOK()
	switch len(devs) {
	case 0:
		if !r.createSent() {
			return r.createDevice(client)
		}
		if left := r.createSettleLeft(); left > 0 {
			// The create may still be running in the API (its client gave
			// up, or this process died waiting): it is adopted if it lands.
			r.Requeue(left)
			return false, nil
		}
		// A create went out and, long after, its device is not listed: it
		// never landed, or it was deleted before this Instance recorded it.
		// Another create could give this Instance a second server, and a
		// create is never sent twice; the pool replaces the Instance instead.
		msg := "no device created for this Instance exists in Equinix Metal (the create's answer was lost and no device appeared, or the device was removed before its ID was recorded); the pool replaces this server"
		conditions.False(&r.Obj.Status.Conditions, r.Obj.Generation, equinixv1.InstanceDeviceCreated, equinixv1.ReasonDeviceGone, msg)
		r.deviceGone(msg)
		return false, nil
	case 1:
		if r.Obj.Status.ProjectID == "" {
			// Found by a tag list of this project.
			if err := r.recordProject(client.ProjectID()); err != nil {
				return false, err
			}
		}
		r.adopt(&devs[0])
		return true, nil
	default:
		ids := make([]string, 0, len(devs))
		for _, d := range devs {
			ids = append(ids, d.ID)
		}
		sort.Strings(ids)
		// Lessons: two matches is an error to surface, never to resolve by
		// picking one (the other would be leaked or the wrong one deleted).
		r.SetCondition(equinixv1.InstanceDeviceCreated, metav1.ConditionFalse, equinixv1.ReasonDuplicateDevices,
			fmt.Sprintf("%d devices carry this Instance's tag (%s); delete the extra ones in Equinix Metal, the addon will adopt the one left",
				len(devs), strings.Join(ids, ", ")))
		r.Requeue(invalidRetry)
		return false, nil
	}
}

// devicesToAdopt lists the devices that carry this Instance's tag: afresh
// when a create was sent (its device may have landed since), from the wave's
// shared list of the pool's devices before the first create.
func (r *run) devicesToAdopt(client metal.Client) ([]metal.Device, error) {
	tag := equinixv1.InstanceTag(string(r.Obj.UID))
	if r.createSent() || r.p.adoption == nil {
		return client.ListDevices(r.p.ctx, metal.ListDevicesOptions{Tag: tag})
	}
	return r.p.adoption.devicesOf(r.p.ctx, client, equinixv1.PoolTag(r.Obj.Spec.PoolName), tag)
}

// adopt takes a device found by this Instance's tag.
func (r *run) adopt(dev *metal.Device) {
	r.Obj.Status.InstanceID = dev.ID
	r.Obj.Status.CreateRetry = nil
	created := metav1.NewTime(dev.CreatedAt)
	if dev.CreatedAt.IsZero() {
		created = metav1.NewTime(r.Now())
	}
	r.Obj.Status.DeviceCreatedAt = &created
	r.SetPhase(equinixv1.PhaseProvisioning)
	r.SetCondition(equinixv1.InstanceDeviceCreated, metav1.ConditionTrue, equinixv1.ReasonDeviceAdopted,
		fmt.Sprintf("adopted device %s, found by this Instance's tag", dev.ID))
	if r.Obj.Spec.BootMode == equinixv1.BootModeSingleBoot {
		// A single-boot device carries the installer from its creation.
		r.markInstallStarted(created, fmt.Sprintf("device %s boots the installer directly (single-boot)", dev.ID))
	}
}

// createDevice sends the create once. In the two-phase flow the device boots
// an iPXE shell (the userdata is the script), so it becomes active quickly and
// its MACs can be read; in single-boot mode it boots the installer at once.
func (r *run) createDevice(client metal.Client) (bool, error) {
	req, ok, err := r.createRequest()
	if err != nil || !ok {
		return false, err
	}
	// The intent is stored before the call, as for the reinstall: a device
	// stored by a create whose ID never reached the status (a crash, a lost
	// answer, a failed status write) is adopted by its tag on the next pass,
	// and if it is gone by then, the intent says a device existed. The
	// project goes with it, so no other project's answer can ever be read as
	// "the device is gone".
	if err := r.recordProject(client.ProjectID()); err != nil {
		return false, err
	}
	conditions.Unknown(&r.Obj.Status.Conditions, r.Obj.Generation, equinixv1.InstanceDeviceCreated, equinixv1.ReasonCreateSent,
		fmt.Sprintf("creating a device (plan %s, metro %s)", req.Plan, req.Metro))
	// The transition time dates the create, on the run's clock: the settle
	// wait counts from it.
	conditions.Get(r.Obj.Status.Conditions, equinixv1.InstanceDeviceCreated).LastTransitionTime = metav1.NewTime(r.Now())
	if err := r.Persist(); err != nil {
		return false, err
	}
	dev, err := client.CreateDevice(r.p.ctx, req)
	if err != nil {
		return r.createFailed(client, err)
	}
	r.Obj.Status.InstanceID = dev.ID
	r.Obj.Status.CreateRetry = nil
	r.Obj.Status.DeviceCreatedAt = r.NowTime()
	r.SetPhase(equinixv1.PhaseProvisioning)
	r.SetCondition(equinixv1.InstanceDeviceCreated, metav1.ConditionTrue, equinixv1.ReasonDeviceCreated,
		fmt.Sprintf("created device %s (plan %s, metro %s, %s billing)", dev.ID, req.Plan, req.Metro, req.BillingCycle))
	if r.Obj.Spec.BootMode == equinixv1.BootModeSingleBoot {
		r.markInstallStarted(*r.Obj.Status.DeviceCreatedAt, fmt.Sprintf("device %s boots the Harvester installer directly (single-boot)", dev.ID))
	}
	// The pass goes on to read the device; its end stores the ID with what
	// the read shows (a crash before that is covered by the intent above).
	return true, nil
}

// createSent reports whether a create was sent whose device was never
// recorded, or was found gone since.
func (r *run) createSent() bool {
	c := conditions.Get(r.Obj.Status.Conditions, equinixv1.InstanceDeviceCreated)
	return c != nil && (c.Reason == equinixv1.ReasonCreateSent || c.Reason == equinixv1.ReasonDeviceGone)
}

// createSettle is how long after a create whose answer was lost its device
// may still appear. The client gave up after one --metal-timeout; the API
// keeps running the request, and is taken to finish within one more.
func (r *run) createSettle() time.Duration { return 2 * r.p.settings.MetalTimeout }

// createSettleLeft is how much longer a create in flight may still land.
func (r *run) createSettleLeft() time.Duration {
	c := conditions.Get(r.Obj.Status.Conditions, equinixv1.InstanceDeviceCreated)
	if c == nil || c.Reason != equinixv1.ReasonCreateSent {
		return 0
	}
	return c.LastTransitionTime.Add(r.createSettle()).Sub(r.Now())
}

// createFailed handles a failed create. A refusal (throttled, invalid, no
// capacity, credentials) stored nothing: the intent goes and the create is
// tried again later. After a lost answer (transport error, timeout, 5xx) the
// device may exist, or appear later: the API can store it after the client
// gave up. It is looked for at once and adopted if there; otherwise the
// intent stays and the create is never resent. Passes within createSettle
// adopt the device if it lands; after that the Instance is given up.
func (r *run) createFailed(client metal.Client, err error) (bool, error) {
	switch failure.ClassOf(err) {
	case failure.Transient, failure.Unknown:
		devs, lerr := client.ListDevices(r.p.ctx, metal.ListDevicesOptions{Tag: equinixv1.InstanceTag(string(r.Obj.UID))})
		if lerr == nil && len(devs) == 1 {
			r.adopt(&devs[0])
			return true, nil
		}
		settle := r.createSettle()
		r.Eventf(equinixv1.ReasonCreateUnconfirmed,
			"the answer to the device create was lost (%s); the device is adopted if it appears within %s, and the create is not sent again",
			failure.Message(err), settle)
		conditions.Unknown(&r.Obj.Status.Conditions, r.Obj.Generation, equinixv1.InstanceDeviceCreated, equinixv1.ReasonCreateSent,
			fmt.Sprintf("the answer to the device create was lost (%s); waiting up to %s for the device to appear", failure.Message(err), settle))
		r.Requeue(r.createSettleLeft())
		return false, nil
	default:
		r.createRefused(err)
		return false, nil
	}
}

// createRefused records a create the API refused. Nothing was stored, so the
// intent goes; the next create (and the list before it) waits as the
// refusal asks, in the status, so that neither the status write nor a
// restart brings it forward.
func (r *run) createRefused(err error) {
	conditions.Remove(&r.Obj.Status.Conditions, equinixv1.InstanceDeviceCreated)
	class := failure.ClassOf(err)
	reason := equinixv1.ReasonInvalidRequest
	switch class {
	case failure.NoCapacity:
		reason = equinixv1.ReasonNoCapacity
	case failure.Throttled:
		reason = equinixv1.ReasonThrottled
	case failure.Unauthorized, failure.Forbidden:
		reason = equinixv1.ReasonCredentialsInvalid
	}
	if reservationRefused(r.Obj, err) {
		reason = equinixv1.ReasonReservationUnavailable
	}
	r.backOff(&r.Obj.Status.CreateRetry, err, reason, r.p.settings.CreateBackoff, maxCreateBackoff)
	retry := r.Obj.Status.CreateRetry
	next := fmt.Sprintf("the next create is sent at %s", retry.NotBefore.UTC().Format(time.RFC3339))
	if retry.Failures > 0 {
		next += fmt.Sprintf(" (%d refused in a row; the wait doubles up to %s)", retry.Failures, maxCreateBackoff)
	}
	switch {
	case class == failure.Throttled:
		// Quiet: throttling is not a problem of this server.
	case reservationRefused(r.Obj, err):
		r.SetCondition(equinixv1.InstanceDeviceCreated, metav1.ConditionFalse, equinixv1.ReasonReservationUnavailable,
			fmt.Sprintf("hardware reservation %s cannot take this server: %s; %s. A server keeps its reservation: fix the pool's hardwareReservationIDs, and the pool replaces this Instance, which has no device yet, with one on the next reservation of the list",
				r.Obj.Spec.HardwareReservationID, failure.Message(err), next))
	case class == failure.Unauthorized, class == failure.Forbidden:
		r.SetCondition(equinixv1.InstanceCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonCredentialsInvalid,
			fmt.Sprintf("Equinix Metal refused the credentials of Secret %s while creating the device: %s; %s",
				r.p.credentials.RefFor(r.Obj.Spec.CredentialsSecret), failure.Message(err), next))
	case class == failure.NoCapacity && r.Obj.Spec.Spot != nil:
		r.SetCondition(equinixv1.InstanceDeviceCreated, metav1.ConditionFalse, reason,
			fmt.Sprintf("Equinix Metal has no spot capacity for plan %s in metro %s at spot.maxPrice %s: %s; %s",
				r.Obj.Spec.Plan, r.Obj.Spec.Metro, r.Obj.Spec.Spot.MaxPrice, failure.Message(err), next))
	case class == failure.NoCapacity:
		r.SetCondition(equinixv1.InstanceDeviceCreated, metav1.ConditionFalse, reason,
			fmt.Sprintf("Equinix Metal has no capacity for plan %s in metro %s: %s; %s", r.Obj.Spec.Plan, r.Obj.Spec.Metro, failure.Message(err), next))
	default:
		r.SetCondition(equinixv1.InstanceDeviceCreated, metav1.ConditionFalse, reason,
			fmt.Sprintf("Equinix Metal rejected the device create: %s; %s", failure.Message(err), next))
	}
}

func (r *run) createRequest() (metal.CreateDeviceRequest, bool, error) {
	spec := &r.Obj.Spec
	req := metal.CreateDeviceRequest{
		Hostname:              r.Obj.Name,
		Description:           fmt.Sprintf("Harvester node %s of InstancePool %s (harvester-equinix-addon)", r.Obj.Name, spec.PoolName),
		Plan:                  spec.Plan,
		Metro:                 strings.ToLower(spec.Metro),
		BillingCycle:          spec.BillingCycle,
		OperatingSystem:       "custom_ipxe",
		AlwaysPXE:             false,
		Tags:                  r.deviceTags(),
		HardwareReservationID: spec.HardwareReservationID,
	}
	if spec.Spot != nil {
		price, err := strconv.ParseFloat(spec.Spot.MaxPrice, 64)
		if err != nil {
			return req, false, fmt.Errorf("spot.maxPrice %q: %w", spec.Spot.MaxPrice, err)
		}
		req.SpotInstance, req.SpotPriceMax = true, price
	}
	// Join information is checked before any paid server exists: a server that
	// cannot join is money spent for nothing.
	in, ok, err := r.installInputs(nil)
	if err != nil || !ok {
		return req, false, err
	}
	if spec.BootMode == equinixv1.BootModeSingleBoot {
		cfg, err := harvester.RenderJoinConfig(in.config)
		if err != nil {
			return req, false, r.configFailure(err)
		}
		req.IPXEScriptURL = in.scriptURL
		req.Userdata = redact.Sensitive(cfg)
		return req, true, nil
	}
	req.Userdata = redact.Sensitive(harvester.ShellScript())
	return req, true, nil
}

// deviceTags are the ownership tags, then the pool's own tags.
func (r *run) deviceTags() []string {
	tags := []string{
		equinixv1.ClusterTag(r.p.clusterID),
		equinixv1.PoolTag(r.Obj.Spec.PoolName),
		equinixv1.InstanceTag(string(r.Obj.UID)),
	}
	return append(tags, r.Obj.Spec.Tags...)
}

// refreshDevice reads the device and copies what users see into the status. It
// returns nil when the device is gone or cannot be read now.
func (r *run) refreshDevice(client metal.Client) (*metal.Device, error) {
	dev, err := client.GetDevice(r.p.ctx, r.Obj.Status.InstanceID)
	switch {
	case metal.IsNotFound(err):
		r.deviceGone(fmt.Sprintf("device %s no longer exists in Equinix Metal; the pool replaces this server", r.Obj.Status.InstanceID))
		return nil, nil
	case failure.ClassOf(err) == failure.Forbidden:
		// A 403 also answers for deleted and failed devices: confirm with the tag
		// list before concluding anything.
		gone, lerr := r.confirmGone(client)
		if lerr != nil {
			return nil, lerr
		}
		if gone {
			r.deviceGone(fmt.Sprintf("device %s is no longer listed in the project; the pool replaces this server", r.Obj.Status.InstanceID))
			return nil, nil
		}
		return nil, r.metalFailure("reading the device", equinixv1.InstanceDeviceActive, err)
	case err != nil:
		return nil, r.metalFailure("reading the device", equinixv1.InstanceDeviceActive, err)
	}
	r.credentialsOK()
	if r.Obj.Status.ProjectID == "" {
		// Made before the project was recorded: the device says where it
		// lives (a token may read devices of several projects).
		project := dev.ProjectID
		if project == "" {
			project = client.ProjectID()
		}
		if err := r.recordProject(project); err != nil {
			return nil, err
		}
	}
	st := &r.Obj.Status
	st.DeviceState = string(dev.State)
	st.PublicIP = dev.PublicIPv4()
	st.PrivateIP = dev.PrivateIPv4()
	if macs := dev.MACs(); len(macs) > 0 {
		st.MACAddresses = macs
	}
	if nt := dev.NetworkType(); nt != "" {
		st.NetworkType = string(nt)
	}
	if dev.Facility != "" {
		st.Facility = dev.Facility
	}
	return dev, nil
}

// confirmGone lists the project's devices by this Instance's tag.
func (r *run) confirmGone(client metal.Client) (bool, error) {
	devs, err := client.ListDevices(r.p.ctx, metal.ListDevicesOptions{Tag: equinixv1.InstanceTag(string(r.Obj.UID))})
	if err != nil {
		return false, r.metalFailure("listing devices to confirm a 403", equinixv1.InstanceDeviceActive, err)
	}
	for _, d := range devs {
		if d.ID == r.Obj.Status.InstanceID {
			return false, nil
		}
	}
	return true, nil
}
