//! Parameters plugins create (`ParameterCreationRequest`, `ParameterDeletionRequest`), by VTube
//! Studio's rules: names of 4 to 32 letters and digits that are not one of the default inputs,
//! values within ±1 000 000, an explanation under 256 characters, owned by the plugin that made
//! them, 100 per plugin and 300 in all. Pure: [`super::TokenStore`] keeps them in its file.

use serde::{Deserialize, Serialize};

use super::params;

/// The most parameters one plugin may create, as VTube Studio.
pub const PER_PLUGIN: usize = 100;

/// The most parameters all plugins together may create, as VTube Studio.
pub const TOTAL: usize = 300;

/// An explanation must be shorter than this many characters, as VTube Studio.
pub const EXPLANATION_LIMIT: usize = 256;

/// The largest magnitude of a minimum, maximum or default value, as VTube Studio.
pub const VALUE_LIMIT: f64 = 1_000_000.0;

/// A parameter a plugin created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustomParam {
    /// Its name, as the plugin spelled it when it last created it.
    pub name: String,
    /// The plugin that created it (`pluginName`).
    pub plugin: String,
    /// That plugin's developer (`pluginDeveloper`).
    pub developer: String,
    /// What it is for, in the plugin's words (may be empty).
    #[serde(default)]
    pub explanation: String,
    /// The lower end of its usual range (not a limit: the value a new mapping starts from).
    pub min: f32,
    /// The upper end of its usual range.
    pub max: f32,
    /// Its value while no plugin sends one.
    pub default: f32,
}

impl CustomParam {
    /// Whether `plugin` by `developer` created it.
    pub fn owned_by(&self, (plugin, developer): (&str, &str)) -> bool {
        self.plugin == plugin && self.developer == developer
    }

    /// The key its injected values are kept under: its name in lower case (names are ASCII).
    pub fn key(&self) -> String {
        self.name.to_ascii_lowercase()
    }
}

/// What a plugin asks to create.
#[derive(Debug, Clone, PartialEq)]
pub struct NewParam<'a> {
    /// `parameterName`.
    pub name: &'a str,
    /// `explanation`.
    pub explanation: &'a str,
    /// `min`.
    pub min: f64,
    /// `max`.
    pub max: f64,
    /// `defaultValue`.
    pub default: f64,
}

/// Why a parameter was not created; each is one of VTube Studio's error IDs (350 to 356).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CreateError {
    /// The name is not 4 to 32 letters and digits.
    #[error("parameter names are 4 to 32 letters and digits, without spaces")]
    Name,
    /// A value is not a number within ±1 000 000.
    #[error("min, max and defaultValue must be numbers between -1000000 and 1000000")]
    Values,
    /// Another plugin created a parameter of that name.
    #[error("the plugin {plugin} created a parameter of this name")]
    Taken {
        /// That plugin.
        plugin: String,
    },
    /// The explanation is 256 characters or longer.
    #[error("the explanation must be shorter than 256 characters")]
    Explanation,
    /// The name is one of the default inputs (VTube Studio's or ARKit's).
    #[error("{0} is a default parameter")]
    Reserved(String),
    /// The plugin created 100 already.
    #[error("a plugin may create at most 100 parameters")]
    PluginLimit,
    /// Plugins created 300 already.
    #[error("at most 300 parameters may be created")]
    TotalLimit,
}

/// Why a parameter was not deleted; each is one of VTube Studio's error IDs (400 to 403).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DeleteError {
    /// The name is missing or not a possible name.
    #[error("parameterName is missing or not a parameter name")]
    Name,
    /// No plugin created a parameter of that name.
    #[error("no parameter of this name was created")]
    NotFound,
    /// Another plugin created it.
    #[error("the plugin {plugin} created this parameter")]
    Owned {
        /// That plugin.
        plugin: String,
    },
    /// It is a default parameter.
    #[error("{0} is a default parameter and cannot be deleted")]
    Reserved(String),
}

/// Whether `name` is a possible name: 4 to 32 ASCII letters and digits.
pub fn valid_name(name: &str) -> bool {
    (4..=32).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// The default parameter `name` is (an input facewire offers, or one of VTube Studio's that it
/// does not), in its own spelling.
fn reserved(name: &str) -> Option<&'static str> {
    params::lookup(name).map(|p| p.name).or_else(|| {
        params::VTS_RESERVED
            .iter()
            .copied()
            .find(|r| r.eq_ignore_ascii_case(name))
    })
}

/// The parameters plugins created.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CustomParams {
    params: Vec<CustomParam>,
}

impl CustomParams {
    /// These parameters (as read from the tokens file).
    pub fn new(params: Vec<CustomParam>) -> CustomParams {
        CustomParams { params }
    }

    /// Every parameter, in the order they were first created.
    pub fn all(&self) -> &[CustomParam] {
        &self.params
    }

    /// The parameter called `name`, in any letter case.
    pub fn get(&self, name: &str) -> Option<&CustomParam> {
        self.params
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case(name))
    }

    /// Creates `new` for `owner` (`pluginName`, `pluginDeveloper`), or sets its values anew
    /// when `owner` created it before. Returns the parameter and whether anything changed.
    pub fn create(
        &mut self,
        owner: (&str, &str),
        new: &NewParam<'_>,
    ) -> Result<(&CustomParam, bool), CreateError> {
        if !valid_name(new.name) {
            return Err(CreateError::Name);
        }
        if let Some(name) = reserved(new.name) {
            return Err(CreateError::Reserved(name.to_string()));
        }
        let value = |v: f64| (v.is_finite() && v.abs() <= VALUE_LIMIT).then_some(v as f32);
        let (Some(min), Some(max), Some(default)) =
            (value(new.min), value(new.max), value(new.default))
        else {
            return Err(CreateError::Values);
        };
        if new.explanation.chars().count() >= EXPLANATION_LIMIT {
            return Err(CreateError::Explanation);
        }
        let made = CustomParam {
            name: new.name.to_string(),
            plugin: owner.0.to_string(),
            developer: owner.1.to_string(),
            explanation: new.explanation.to_string(),
            min,
            max,
            default,
        };
        if let Some(i) = self
            .params
            .iter()
            .position(|p| p.name.eq_ignore_ascii_case(new.name))
        {
            let old = &mut self.params[i];
            if !old.owned_by(owner) {
                return Err(CreateError::Taken {
                    plugin: old.plugin.clone(),
                });
            }
            let changed = *old != made;
            *old = made;
            return Ok((&self.params[i], changed));
        }
        if self.params.iter().filter(|p| p.owned_by(owner)).count() >= PER_PLUGIN {
            return Err(CreateError::PluginLimit);
        }
        if self.params.len() >= TOTAL {
            return Err(CreateError::TotalLimit);
        }
        self.params.push(made);
        Ok((self.params.last().expect("just pushed"), true))
    }

    /// Deletes the parameter `name` that `owner` created.
    pub fn delete(&mut self, owner: (&str, &str), name: &str) -> Result<CustomParam, DeleteError> {
        if let Some(name) = reserved(name) {
            return Err(DeleteError::Reserved(name.to_string()));
        }
        if !valid_name(name) {
            return Err(DeleteError::Name);
        }
        let i = self
            .params
            .iter()
            .position(|p| p.name.eq_ignore_ascii_case(name))
            .ok_or(DeleteError::NotFound)?;
        if !self.params[i].owned_by(owner) {
            return Err(DeleteError::Owned {
                plugin: self.params[i].plugin.clone(),
            });
        }
        Ok(self.params.remove(i))
    }

    /// Keeps only the parameters whose plugin `allowed` still allows (a plugin whose token was
    /// revoked loses its parameters, as in VTube Studio); the parameters dropped.
    pub fn retain_allowed(&mut self, allowed: impl Fn(&str, &str) -> bool) -> Vec<CustomParam> {
        let (kept, gone) = std::mem::take(&mut self.params)
            .into_iter()
            .partition(|p| allowed(&p.plugin, &p.developer));
        self.params = kept;
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: (&str, &str) = ("Heart Rate", "Someone");
    const OTHER: (&str, &str) = ("Bonk", "Someone Else");

    fn new(name: &str) -> NewParam<'_> {
        NewParam {
            name,
            explanation: "",
            min: -50.0,
            max: 50.0,
            default: 10.0,
        }
    }

    #[test]
    fn names_follow_vtube_studios_rules() {
        let mut p = CustomParams::default();
        for bad in [
            "abc",
            "has space",
            "under_score",
            "Ünïcode",
            &"x".repeat(33),
            "",
        ] {
            assert_eq!(p.create(ME, &new(bad)), Err(CreateError::Name), "{bad}");
        }
        // Default inputs, VTube Studio's or ARKit's, in any letter case.
        for taken in [
            "MouthOpen",
            "faceanglex",
            "FacePositionZ",
            "JawOpen",
            "eyeBlinkLeft",
        ] {
            assert!(
                matches!(p.create(ME, &new(taken)), Err(CreateError::Reserved(_))),
                "{taken}"
            );
        }
        let (made, changed) = p.create(ME, &new("HeartRate")).unwrap();
        assert_eq!(made.name, "HeartRate");
        assert!(changed);
        assert_eq!(p.get("heartrate").unwrap().default, 10.0);
    }

    #[test]
    fn values_and_explanations_are_checked() {
        let mut p = CustomParams::default();
        for (min, max, default) in [(f64::NAN, 1.0, 0.0), (0.0, 2e6, 0.0), (0.0, 1.0, -1e7)] {
            let bad = NewParam {
                min,
                max,
                default,
                ..new("Param")
            };
            assert_eq!(p.create(ME, &bad), Err(CreateError::Values));
        }
        let long = "x".repeat(256);
        let bad = NewParam {
            explanation: &long,
            ..new("Param")
        };
        assert_eq!(p.create(ME, &bad), Err(CreateError::Explanation));
        let ok = NewParam {
            explanation: &long[..255],
            ..new("Param")
        };
        assert!(p.create(ME, &ok).is_ok());
    }

    #[test]
    fn a_plugin_owns_what_it_creates_and_may_create_it_again() {
        let mut p = CustomParams::default();
        p.create(ME, &new("HeartRate")).unwrap();
        assert_eq!(
            p.create(OTHER, &new("heartRATE")),
            Err(CreateError::Taken {
                plugin: "Heart Rate".into()
            })
        );
        // Again by its owner: no change, or new values.
        assert!(!p.create(ME, &new("HeartRate")).unwrap().1);
        let wider = NewParam {
            max: 220.0,
            ..new("HeartRate")
        };
        assert!(p.create(ME, &wider).unwrap().1);
        assert_eq!(p.get("HeartRate").unwrap().max, 220.0);
        assert_eq!(p.all().len(), 1);
        assert_eq!(
            p.delete(OTHER, "HeartRate"),
            Err(DeleteError::Owned {
                plugin: "Heart Rate".into()
            })
        );
        assert_eq!(
            p.delete(ME, "MouthOpen"),
            Err(DeleteError::Reserved("MouthOpen".into()))
        );
        assert_eq!(p.delete(ME, "Nothing"), Err(DeleteError::NotFound));
        assert_eq!(p.delete(ME, "no"), Err(DeleteError::Name));
        assert_eq!(p.delete(ME, "heartrate").unwrap().name, "HeartRate");
        assert!(p.all().is_empty());
    }

    #[test]
    fn at_most_100_per_plugin_and_300_in_all() {
        let mut p = CustomParams::default();
        let name = |i: usize| format!("Param{i}");
        for i in 0..PER_PLUGIN {
            p.create(ME, &new(&name(i))).unwrap();
        }
        assert_eq!(
            p.create(ME, &new(&name(PER_PLUGIN))),
            Err(CreateError::PluginLimit)
        );
        // Creating one it has again is no new one.
        assert!(p.create(ME, &new(&name(0))).is_ok());
        for (k, owner) in [("A", ("Plugin A", "Dev")), ("B", ("Plugin B", "Dev"))] {
            for i in 0..PER_PLUGIN {
                p.create(owner, &new(&format!("{k}Param{i}"))).unwrap();
            }
        }
        assert_eq!(p.all().len(), TOTAL);
        assert_eq!(
            p.create(("Plugin C", "Dev"), &new("OneMore")),
            Err(CreateError::TotalLimit)
        );
    }

    #[test]
    fn a_revoked_plugin_loses_its_parameters() {
        let mut p = CustomParams::default();
        p.create(ME, &new("HeartRate")).unwrap();
        p.create(OTHER, &new("BonkPower")).unwrap();
        let gone = p.retain_allowed(|plugin, _| plugin == "Bonk");
        assert_eq!(gone.len(), 1);
        assert_eq!(p.all().len(), 1);
        assert!(p.get("BonkPower").is_some());
    }
}
