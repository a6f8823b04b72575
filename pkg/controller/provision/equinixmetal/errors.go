package equinixmetal

import (
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
)

// Slow retries for problems a person has to fix; the Secret watch and pool
// edits re-run the Instance at once when they do.
const (
	authRetry     = time.Minute
	invalidRetry  = 5 * time.Minute
	capacityRetry = 5 * time.Minute
)

// metalFailure turns a failed Metal call into an action, so that no error is
// swallowed and none causes a hot loop:
//   - throttled: wait what the API asked, quietly;
//   - busy: poll again;
//   - 401/403: the credentials condition says so, retry slowly;
//   - invalid request or no capacity: the step's condition says why, retry slowly;
//   - transient or unknown: return the error so the workqueue backs off (and
//     lasso logs it once).
//
// cond is the condition of the step that failed. It never removes a finalizer:
// callers decide that only on a confirmed 404.
func (r *run) metalFailure(step, cond string, err error) error {
	switch failure.ClassOf(err) {
	case failure.Throttled:
		wait := failure.RetryAfter(err)
		if wait <= 0 {
			wait = r.PollInterval()
		}
		logrus.Debugf("instance %s: %s throttled by the Metal API, retrying in %s", r.Obj.Name, step, wait)
		r.Requeue(wait)
		return nil
	case failure.Busy:
		r.Poll()
		return nil
	case failure.Unauthorized, failure.Forbidden:
		r.SetCondition(equinixv1.InstanceCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonCredentialsInvalid,
			fmt.Sprintf("Equinix Metal refused the credentials of Secret %s while %s: %s",
				r.p.credentials.RefFor(r.Obj.Spec.CredentialsSecret), step, failure.Message(err)))
		r.Requeue(authRetry)
		return nil
	case failure.Invalid:
		r.SetCondition(cond, metav1.ConditionFalse, equinixv1.ReasonInvalidRequest,
			fmt.Sprintf("Equinix Metal rejected %s: %s", step, failure.Message(err)))
		r.Requeue(invalidRetry)
		return nil
	case failure.NoCapacity:
		r.SetCondition(cond, metav1.ConditionFalse, equinixv1.ReasonNoCapacity,
			fmt.Sprintf("no capacity for plan %s in metro %s while %s: %s; retrying every %s",
				r.Obj.Spec.Plan, r.Obj.Spec.Metro, step, failure.Message(err), capacityRetry))
		r.Requeue(capacityRetry)
		return nil
	default:
		return fmt.Errorf("%s: %w", step, err)
	}
}

// reservationRefused reports whether a refused create names the server's
// hardware reservation as the reason: used by another device, of another
// plan or metro, a spare, not provisionable again yet, or none left for
// next-available. The API has no error codes, so its message tells.
func reservationRefused(inst *equinixv1.Instance, err error) bool {
	if inst.Spec.HardwareReservationID == "" {
		return false
	}
	switch failure.ClassOf(err) {
	case failure.Invalid, failure.Busy, failure.NoCapacity:
		return strings.Contains(strings.ToLower(failure.Message(err)), "reservation")
	}
	return false
}
