"""Config composition and validation: bad keys, types and values fail at start, naming the key."""
import pytest
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from gan.config.schema import CONFIG_DIR, Config, ConfigError, compose_config, to_config


def _error_text(err: BaseException) -> str:
    """The message of an exception and of everything it was raised from."""
    parts = []
    while err is not None:
        parts.append(str(err))
        err = err.__cause__ or err.__context__
    return "\n".join(parts)


def test_default_config_composes_to_validated_dataclasses():
    conf = OmegaConf.to_object(compose_config())
    assert isinstance(conf, Config)
    assert (conf.model.image_size, conf.data.name, conf.precision.name, conf.runtime.mode) == (32, "mnist", "fp32",
                                                                                              "graph")
    assert conf.train.lr == 2e-4 and (conf.train.beta1, conf.train.beta2) == (0.5, 0.999)
    assert conf.train.ema_beta is None and conf.fusion.name == "auto"


@pytest.mark.parametrize("preset, slope", [("preset_lowres", 0.2), ("preset_highres", 0.01),
                                           ("preset_video", 0.1), ("preset_pointcloud", 0.3)])
def test_act_presets_set_the_article_slopes(preset, slope):
    assert compose_config([f"act={preset}"]).act.negative_slope == slope


def test_per_layer_slopes_override():
    conf = OmegaConf.to_object(compose_config(["act.d_layers=[0.2,0.1,0.05]"]))
    assert conf.act.d_layers == [0.2, 0.1, 0.05]


@pytest.mark.parametrize("override, key", [("train.stepz=3", "train.stepz"), ("model.ngff=8", "model.ngff")])
def test_unknown_key_is_rejected_naming_it(override, key):
    with pytest.raises(ConfigCompositionException) as info:
        compose_config([override])
    assert key in _error_text(info.value)


@pytest.mark.parametrize("override, key", [("train.steps=many", "train.steps"),
                                           ("train.lr=fast", "train.lr"),
                                           ("train.dry_run=maybe", "train.dry_run")])
def test_wrong_type_is_rejected_naming_the_key(override, key):
    with pytest.raises(ConfigCompositionException) as info:
        compose_config([override])
    assert key in _error_text(info.value)


@pytest.mark.parametrize("override, message", [
    ("runtime.mode=fast", "runtime.mode='fast'"),
    ("runtime.device_target=TPU", "runtime.device_target='TPU'"),
    ("model.image_size=48", "model.image_size=48"),
    ("model.conv_impl=winograd", "model.conv_impl='winograd'"),
    ("train.batch_size=0", "train.batch_size=0"),
    ("train.beta1=1.5", "train.beta1=1.5"),
    ("act.negative_slope=-0.2", "act.negative_slope=-0.2"),
    ("act.d_layers=[0.2,1.5,0.1]", "act.d_layers[1]=1.5"),
    ("data.name=imagenet", "data.name='imagenet'"),
    ("model.d_maxout=1", "model.d_maxout=1"),
    ("model.d_maxout=5", "model.d_maxout=5 is built for model=mlp"),
])
def test_bad_value_is_rejected_naming_key_and_value(override, message):
    with pytest.raises(ConfigError, match="^" + message.replace("[", r"\[").replace("]", r"\]")):
        OmegaConf.to_object(compose_config([override]))


@pytest.mark.parametrize("override, message", [
    ("act.d_kind=prelu", "act.d_kind='prelu'"), ("act.d_layers=[0.1,0.2,0.3]", "act.d_layers"),
    ("fusion=bn_act", "fusion=bn_act with model.d_maxout=5 and model.d_norm=batch"),
    ("diagnostics.recycle=true", "diagnostics.recycle=true on D with model.d_maxout=5")])
def test_maxout_d_refuses_what_it_would_ignore(override, message):
    extra = ["model.d_norm=batch"] if override.startswith("fusion") else []
    with pytest.raises(ConfigError, match=message.replace("[", r"\[")):
        OmegaConf.to_object(compose_config(["experiment=ring8", "model.d_maxout=5", override, *extra]))


def test_maxout_d_is_part_of_the_experiment_and_older_checkpoints_read_as_off():
    """Resuming with another model.d_maxout changes D's shapes: an experiment change, never silently allowed; a
    checkpoint's config from before the key existed reads as 0 (off)."""
    from gan.config.schema import config_from_yaml, experiment_changes

    plain, maxout = (OmegaConf.to_object(compose_config(["experiment=ring8", *extra]))
                     for extra in ([], ["model.d_maxout=5"]))
    assert experiment_changes(plain, maxout) == {"model.d_maxout": [0, 5]}
    stored = OmegaConf.to_container(compose_config(["experiment=ring8"]))
    del stored["model"]["d_maxout"]
    assert experiment_changes(config_from_yaml(OmegaConf.to_yaml(stored)), plain) == {}


def test_bad_fusion_is_rejected_at_composition_listing_the_choices():
    """fusion.name is an Enum in the schema, so Hydra itself rejects an unknown value and lists the allowed ones."""
    with pytest.raises(ConfigCompositionException) as info:
        compose_config(["fusion.name=conv_bn_act"])
    text = _error_text(info.value)
    assert "fusion.name" in text and "conv_bn_act" in text and "[auto, none, bn_act, graph_kernel, conv_act]" in text


def test_bad_enum_lists_the_allowed_values():
    with pytest.raises(ConfigError, match=r"\['graph', 'pynative'\]"):
        OmegaConf.to_object(compose_config(["runtime.mode=fast"]))


def test_unknown_group_option_is_rejected():
    with pytest.raises(ConfigCompositionException) as info:
        compose_config(["precision=fp8"])
    assert "fp8" in _error_text(info.value) and "fp16" in _error_text(info.value)


def test_steps_and_epochs_are_exclusive():
    with pytest.raises(ConfigError, match="exactly one of train.steps"):
        OmegaConf.to_object(compose_config(["train.epochs=2"]))
    conf = OmegaConf.to_object(compose_config(["train.epochs=2", "train.steps=null"]))
    assert conf.train.epochs == 2 and conf.train.steps is None


def test_folder_data_needs_a_root():
    with pytest.raises(Exception) as info:
        OmegaConf.to_object(compose_config(["data=folder"]))
    assert "data.root" in _error_text(info.value)


@pytest.mark.parametrize("group", ["act", "train", "eval", "diagnostics", "runtime", "precision", "model"])
def test_dataclass_defaults_agree_with_the_default_yaml_files(group):
    """`Config()` in code and `python train.py` run the same settings (model: dcgan32, precision: fp32)."""
    from dataclasses import asdict, fields

    name = {"model": "dcgan32", "precision": "fp32"}.get(group, "default")
    yaml_values = OmegaConf.to_container(OmegaConf.load(CONFIG_DIR / group / f"{name}.yaml"))
    defaults = asdict(next(f.default_factory() for f in fields(Config) if f.name == group))
    assert yaml_values == {k: v for k, v in defaults.items() if k in yaml_values}
    assert set(defaults) == set(yaml_values), "every key of the group is stated in its default file"


@pytest.mark.parametrize("preset", ["preset_lowres", "preset_highres", "preset_video", "preset_pointcloud", "toy2d"])
def test_activation_presets_state_only_the_keys_they_change(preset):
    """A preset is its slope(s): the per-layer lists and the clamp keep their defaults (preset_lowres states 0.2,
    the default slope, because that value is the preset)."""
    stated = OmegaConf.to_container(OmegaConf.load(CONFIG_DIR / "act" / f"{preset}.yaml"))
    assert stated and set(stated) <= {"negative_slope", "g_negative_slope"} and None not in stated.values()


@pytest.mark.parametrize("name, recipe", [
    ("ring8", ["data=ring8", "model=mlp", "act=toy2d", "train=toy2d", "eval=toy2d", "fusion=none"]),
    ("grid25", ["data=grid25", "model=mlp", "act=toy2d", "train=toy2d", "eval=toy2d", "fusion=none"]),
    ("sngan_mnist", ["model.d_norm=spectral", "train.loss=hinge"]),
    ("dead_channels", ["fusion=none", "model.d_norm=none", "act.negative_slope=0", "act.g_negative_slope=0.2",
                       "train.lr=1e-3", "diagnostics.interval=50"]),
    ("wgan_gp_mnist", ["model.d_norm=none", "train.loss=wgan_gp", "train.d_steps=5", "train.lr=1e-4",
                       "train.beta1=0.5", "train.beta2=0.9"]),
])
def test_experiments_are_their_recipes(name, recipe):
    experiment = OmegaConf.to_object(compose_config([f"experiment={name}"]))
    assert experiment == OmegaConf.to_object(compose_config(recipe))


def test_data_ring8_alone_is_only_the_data_and_names_the_experiment():
    assert compose_config(["data=ring8"]).model.name == "dcgan"
    with pytest.raises(ConfigError, match="experiment=ring8"):
        OmegaConf.to_object(compose_config(["data=ring8"]))


@pytest.mark.parametrize("override, message", [
    ("act.clamp=nan", "act.clamp=nan must be a finite number"),
    ("train.lr=nan", "train.lr=nan must be a finite number"),
    ("train.lr=inf", "train.lr=inf must be a finite number"),
    ("precision.loss_scale=inf", "precision.loss_scale=inf must be a finite number"),
    ("train.epochs=inf", "train.epochs=inf must be a finite number"),
])
def test_non_finite_float_is_rejected_naming_the_key(override, message):
    with pytest.raises(ConfigError, match=message):
        OmegaConf.to_object(compose_config([override, "train.steps=null"] if "epochs" in override else [override]))


def test_experiment_changes_skip_the_allow_list_and_name_the_rest():
    from gan.config.schema import experiment_changes

    base = OmegaConf.to_object(compose_config())
    same = OmegaConf.to_object(compose_config(["train.steps=50", "train.log_every=3", "runtime.threads=1",
                                               "eval.interval=7", "train.resume=auto", "model.conv_impl=gemm",
                                               "fusion=bn_act"]))
    assert experiment_changes(base, same) == {}
    other = OmegaConf.to_object(compose_config(["act.negative_slope=0.05", "train.lr=1e-3",
                                                "model.ngf=16", "precision=fp16", "seed=2"]))
    assert experiment_changes(base, other) == {
        "act.negative_slope": [0.2, 0.05], "model.ngf": [32, 16],
        "precision.name": ["fp32", "fp16"], "precision.loss_scale": [1.0, 65536.0], "seed": [0, 2],
        "train.lr": [2e-4, 1e-3]}


@pytest.mark.parametrize("overrides, message", [
    (["act.clamp=1e-30"], r"act.clamp=1e-30 is below 0.01: .* nearly every unit saturates .* act.clamp=null"),
    (["act.clamp=0.005", "precision=fp16"], r"act.clamp=0.005 is below 0.01"),
    (["act.clamp=100000", "precision=fp16"], r"act.clamp=100000.0 with precision=fp16: float16's largest finite "
                                             r"value is 65504, .* prevents no overflow; use act.clamp<=65504"),
])
def test_a_clamp_that_defeats_itself_is_refused_with_the_reason(overrides, message):
    """A representable but tiny clamp trained a constant D silently; fp16 cannot reach a clamp above 65504."""
    with pytest.raises(ConfigError, match=message):
        OmegaConf.to_object(compose_config(overrides))


@pytest.mark.parametrize("overrides", [["act.clamp=0.01"], ["act.clamp=256", "precision=fp16"],
                                       ["act.clamp=100000"], ["act.clamp=65504", "precision=fp16"]])
def test_useful_clamps_are_accepted(overrides):
    OmegaConf.to_object(compose_config(overrides))


# The probe's 351-byte "billion laughs": 10^7 leaves once its aliases are expanded.
LAUGHS = "a: &a [l, l, l, l, l, l, l, l, l, l]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(6))


@pytest.mark.parametrize("text, message", [
    (LAUGHS, r"x.ckpt: not YAML this project reads: it uses the YAML alias \*a \(line 2\)"),
    ("a:\n" + "".join("  " * i + f"- b{i}:\n" for i in range(40)), "nests collections deeper than 32 levels"),
    ("x: " + "y" * (1 << 20) + "\n", r"x.ckpt: its YAML is larger than 1048576 bytes"),
    ("data:\n  root: ${oc.env:HOME}/x\nact:\n  d_kind: ${oc.env:USER}\n",
     r"holds OmegaConf interpolations \(\$\{...\}\) at data.root, act.d_kind; .* its resolvers are not run"),
    ("- 1\n- 2\n", "the stored config is a YAML list, not a mapping"),
])
def test_a_checkpoints_stored_config_is_parsed_with_bounds(text, message):
    """Checkpoints come from other people: the embedded YAML is bounded before OmegaConf sees it."""
    from gan.config.schema import config_from_yaml
    from gan.core.untrusted import UntrustedFileError

    with pytest.raises(UntrustedFileError, match=message):
        config_from_yaml(text, "x.ckpt")


def test_a_stored_config_round_trips():
    from gan.config.schema import config_from_yaml

    conf = OmegaConf.to_object(compose_config(["act.negative_slope=0.1", "data=folder", "data.root=/data/x"]))
    assert config_from_yaml(OmegaConf.to_yaml(OmegaConf.structured(conf)), "x.ckpt") == conf


@pytest.mark.parametrize("override, message", [
    ("model.ngf=100000", "model.ngf=100000 is above 1024"),
    ("model.nz=1000000000000", "model.nz=1000000000000 is above 4096"),
    ("train.num_samples=1000000000", "train.num_samples=1000000000 is above 4096"),
    ("train.d_steps=1000000", "train.d_steps=1000000 is above 100"),
    ("train.batch_size=100000", "train.batch_size=100000 is above 4096"),
    ("eval.fid_samples=10000000", "eval.fid_samples=10000000 is above 50000"),
])
def test_sizes_above_their_bound_are_refused_naming_key_and_bound(override, message):
    """Issue 51, L10: these ended in a MemoryError (or minutes of gathering batches) instead of a config error."""
    from gan.config.schema import check_sizes

    with pytest.raises(ConfigError, match=message):
        check_sizes(to_config(compose_config([override])))


@pytest.mark.parametrize("recipe", ["model=dcgan128", "experiment=ring8", "experiment=wgan_gp_mnist"])
def test_every_recipe_is_within_the_size_bounds(recipe):
    from gan.config.schema import check_sizes

    check_sizes(to_config(compose_config([recipe])))
