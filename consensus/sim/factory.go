package sim

import "github.com/lodestream/lodestream/consensus"

// CoreFactory drives the real VSR core.
func CoreFactory() Factory {
	return Factory{
		New: func(cfg consensus.Config) (consensus.Group, error) {
			r, err := consensus.New(cfg)
			if err != nil {
				return nil, err
			}
			return r, nil
		},
		Restart: func(cfg consensus.Config, st consensus.Restored) (consensus.Group, error) {
			r, err := consensus.Restart(cfg, st)
			if err != nil {
				return nil, err
			}
			return r, nil
		},
	}
}
