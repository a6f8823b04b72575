package main

import (
	"fmt"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/network"
)

// convergePorts runs the planner's steps as the controller does, sending
// each with send and reading the device back with read only after a
// structural step whose answer does not show what it changed.
func convergePorts(dev *metal.Device, tmpl *equinixv1.InstanceTemplate, phase network.Phase, vlans map[int]string,
	send func(network.Step) (*metal.Port, error), read func(id string) (*metal.Device, error)) (*metal.Device, error) {
	for {
		want, err := network.Want(dev.Ports, tmpl, phase)
		if err != nil {
			return nil, err
		}
		steps := network.Steps(dev.Ports, want, vlans)
		if len(steps) == 0 {
			return dev, nil
		}
		dev = dev.DeepCopy()
		for _, s := range steps {
			answer, err := send(s)
			if err != nil {
				return nil, fmt.Errorf("%s on device %s: %w", s, dev.ID, err)
			}
			if !s.Structural() {
				dev.Ports = network.AfterVLANSteps(dev.Ports, []network.Step{s})
				continue
			}
			if ports, ok := network.AfterAnswer(dev.Ports, s, answer); ok {
				dev.Ports = ports
			} else if dev, err = read(dev.ID); err != nil {
				return nil, err
			}
			break
		}
	}
}
