//! Tests of the sections whose types live with their subsystems, read through the whole
//! configuration: defaults, values, and errors located in the file with a suggestion.

mod pose {
    use crate::config::{ArmsMode, Config};

    #[test]
    fn the_defaults_relax_the_arms() {
        let rest = Config::default()
            .pose
            .arm_rest()
            .expect("relaxed by default");
        assert_eq!(rest, crate::avatar::ArmRest::default());
        assert!((60.0..=75.0).contains(&rest.down_degrees));
    }

    #[test]
    fn as_modelled_turns_it_off_and_values_are_read() {
        let c = Config::parse("[pose]\narms = \"as_modelled\"\n", "f.toml").unwrap();
        assert_eq!(c.pose.arms, ArmsMode::AsModelled);
        assert_eq!(c.pose.arm_rest(), None);
        let c = Config::parse(
            "[pose]\narm_down_degrees = 65\narm_forward_degrees = -5\nelbow_degrees = 30\n",
            "f.toml",
        )
        .unwrap();
        let rest = c.pose.arm_rest().unwrap();
        assert_eq!(
            (rest.down_degrees, rest.forward_degrees, rest.elbow_degrees),
            (65.0, -5.0, 30.0)
        );
    }

    #[test]
    fn bad_values_are_located_with_a_suggestion() {
        let text = "[camera]\nzoom = 1.0\n\n[pose]\n  elbow_degrees = 200\n";
        let err = Config::parse(text, "f.toml").unwrap_err().to_string();
        assert!(err.starts_with("f.toml:5:3:"), "{err}");
        assert!(err.contains("elbow_degrees = 200 is out of range"), "{err}");
        assert!(err.contains("use 0 to 120 degrees"), "{err}");
        let err = Config::parse("[pose]\narms = \"relax\"\n", "f.toml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("f.toml:2:"), "{err}");
        assert!(err.contains("relaxed"), "{err}");
        let err = Config::parse("[pose]\narm_down = 70\n", "f.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("arm_down_degrees"), "{err}");
    }
}

mod lipsync {
    use crate::config::Config;
    use crate::lipsync::LipMode;

    #[test]
    fn defaults_follow_the_analysis_defaults() {
        let c = Config::default();
        assert_eq!(c.lipsync.mode, LipMode::WhenLost);
        assert_eq!(c.lipsync.settings(), crate::lipsync::LipSettings::default());
        assert_eq!(c.lipsync.device(), None);
    }

    #[test]
    fn values_are_read() {
        let c = Config::parse(
            "[lipsync]\nmode = \"blend\"\ndevice = \" USB \"\nhold_ms = 120\nlead_ms = 40\n",
            "f.toml",
        )
        .unwrap();
        assert_eq!(c.lipsync.mode, LipMode::Blend);
        assert_eq!(c.lipsync.device(), Some("USB"));
        assert!((c.lipsync.settings().hold - 0.12).abs() < 1e-6);
        assert_eq!(c.lipsync.lead_ms, 40.0);
    }

    #[test]
    fn the_gate_follows_the_voice_unless_a_bound_is_set() {
        use crate::lipsync::Level;
        assert_eq!(Config::default().lipsync.settings().level, Level::Auto);
        let c = Config::parse("[lipsync]\nfloor_db = -60\n", "f.toml").unwrap();
        let s = c.lipsync.settings();
        assert_eq!(
            (s.level, s.floor_db, s.ceiling_db),
            (Level::Fixed, -60.0, -40.0)
        );
        let c = Config::parse("[lipsync]\nceiling_db = -25\n", "f.toml").unwrap();
        let s = c.lipsync.settings();
        assert_eq!(
            (s.level, s.floor_db, s.ceiling_db),
            (Level::Fixed, -45.0, -25.0)
        );
    }

    #[test]
    fn bad_values_are_located_with_a_suggestion() {
        let err = Config::parse("[camera]\nzoom = 1.0\n[lipsync]\n strength = 3\n", "f.toml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("f.toml:4:2:"), "{err}");
        assert!(err.contains("use 0 to 1"), "{err}");
        let err = Config::parse("[lipsync]\nfloor_db = -20\nceiling_db = -40\n", "f.toml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("f.toml:3:"), "{err}");
        assert!(err.contains("not above floor_db"), "{err}");
        let err = Config::parse("[lipsync]\nmode = \"lost\"\n", "f.toml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("f.toml:2:"), "{err}");
        assert!(err.contains("when_lost"), "{err}");
    }
}

mod smoothing {
    use crate::config::Config;

    #[test]
    fn the_documented_file_sets_no_key_its_filter_ignores() {
        let documented = include_str!("../../config/facewire.toml");
        let config = Config::parse(documented, "facewire.toml").unwrap();
        assert!(config.smoothing.unused_keys(documented).is_empty());
    }
}
