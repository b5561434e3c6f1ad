//! The configuration's layers, defaults and refusals.

use super::*;
use serde_json::json;

#[test]
fn layers_merge_in_order() {
    let user = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(
        user.path().join(CONFIG_FILE_NAME),
        "keepRecentTokens = 1000\nreserveTokens = 5\n[summarizer]\ndelayMs = 7\n",
    )
    .unwrap();
    std::fs::write(
        workspace.path().join(CONFIG_FILE_NAME),
        "keepRecentTokens = 2000\n",
    )
    .unwrap();
    let options = json!({"reserveTokens": 9, "summarizer": {"provider": "test"}});
    let config =
        Config::resolve(Some(&options), Some(workspace.path()), Some(user.path())).unwrap();
    assert_eq!(config.keep_recent_tokens, 2000, "workspace beats user");
    assert_eq!(config.reserve_tokens, 9, "initializationOptions beat files");
    assert_eq!(config.summarizer.delay_ms, 7, "nested fields merge");
    assert_eq!(config.summarizer.provider, SummarizerProvider::Test);
    assert_eq!(config.auto_compact_percent, 90.0, "defaults fill the rest");
}

#[test]
fn llm_summarizer_settings_and_the_max_tokens_default() {
    let config = Config::resolve(
        Some(&json!({"reserveTokens": 1000, "summarizer": {
            "provider": "openai", "model": "smollm2", "baseUrl": "http://127.0.0.1:8765/v1",
            "apiKeyEnv": "MY_LLM_KEY", "temperature": 0, "timeoutMs": 5000,
            "contextWindow": 4096, "stream": false
        }})),
        None,
        None,
    )
    .unwrap();
    let s = &config.summarizer;
    assert_eq!(s.provider, SummarizerProvider::Openai);
    assert_eq!(s.max_tokens, Some(800), "80% of reserveTokens");
    assert_eq!(s.api_key_env.as_deref(), Some("MY_LLM_KEY"));
    assert_eq!(
        (s.timeout_ms, s.context_window, s.stream),
        (5000, Some(4096), false)
    );
    let config = Config::resolve(
        Some(&json!({"summarizer": {"provider": "anthropic", "model": "m", "maxTokens": 99}})),
        None,
        None,
    )
    .unwrap();
    assert_eq!(config.summarizer.max_tokens, Some(99), "explicit wins");
    let err = Config::resolve(
        Some(&json!({"summarizer": {"provider": "anthropic"}})),
        None,
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("summarizer.model"), "{err}");
    let err = Config::resolve(
        Some(&json!({"summarizer": {"provider": "openai", "extraBody": {"stream": false}}})),
        None,
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("summarizer.extraBody.stream"), "{err}");
}

#[test]
fn keys_in_configuration_are_refused_without_being_echoed() {
    let key = "sk-proj-AbCdEf0123456789SECRET";
    for summarizer in [
        json!({"provider": "openai", "apiKey": key}),
        json!({"provider": "openai", "apiKeyEnv": key}),
        json!({"provider": "openai", "temperature": key}),
        json!({"provider": "openai", "model": 1, "baseUrl": key, "stream": key}),
    ] {
        let err = Config::resolve(Some(&json!({ "summarizer": summarizer })), None, None)
            .unwrap_err()
            .to_string();
        assert!(!err.contains("SECRET"), "key echoed: {err}");
        assert!(err.contains("summarizer."), "{err}");
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(CONFIG_FILE_NAME),
        format!("[summarizer]\nprovider = \"openai\"\napiKey = \"{key}\"\n"),
    )
    .unwrap();
    let err = Config::resolve(None, Some(dir.path()), None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("apiKeyEnv") && !err.contains("SECRET"),
        "{err}"
    );
}

#[test]
fn credentials_in_the_base_url_and_extra_body_are_refused_without_being_echoed() {
    // (a base URL, a word of the reason)
    let urls = [
        ("https://me:SECRETpw@api.example/v1", "user:password@"),
        ("https://SECRETuser@api.example/v1", "user:password@"),
        ("https://api.example/v1?key=SECRET", "named like `key`"),
        (
            "https://api.example/v1?x=1&Api_Key=SECRET",
            "named like `apikey`",
        ),
        (
            "https://api.example/v1?access_token=SECRET",
            "named like `accesstoken`",
        ),
        ("SECRET", "http:// or https:// URL"),
        ("file:///SECRET", "http:// or https:// URL"),
    ];
    // (an extra body, a word of the reason)
    let bodies = [
        (json!({"api_key": "SECRET"}), "named like `apikey`"),
        (
            json!({"x": [{"Authorization": "Bearer SECRET"}]}),
            "named like `authorization`",
        ),
        (json!({"token": "SECRET"}), "named like `token`"),
    ];
    let cases = urls
        .into_iter()
        .map(|(url, why)| (json!({ "baseUrl": url }), "baseUrl", why))
        .chain(
            bodies
                .into_iter()
                .map(|(body, why)| (json!({ "extraBody": body }), "extraBody", why)),
        );
    for (summarizer, field, why) in cases {
        let mut summarizer = summarizer;
        summarizer["provider"] = json!("openai");
        let err = Config::resolve(Some(&json!({ "summarizer": summarizer })), None, None)
            .unwrap_err()
            .to_string();
        assert!(!err.contains("SECRET"), "echoed: {err}");
        assert!(
            err.contains(&format!("summarizer.{field}")) && err.contains(why),
            "{err}"
        );
    }
    // Ordinary URLs and options pass.
    let ok = json!({"summarizer": {"provider": "openai",
        "baseUrl": "http://127.0.0.1:8765/v1?api-version=2024-02-01",
        "extraBody": {"max_completion_tokens": 5, "keep_alive": "5m", "n_keep": 1,
                      "thinking": {"budget_tokens": 0}}}});
    assert!(Config::resolve(Some(&ok), None, None).is_ok());
}

#[test]
fn the_key_value_itself_is_refused_anywhere_in_the_configuration() {
    let key = "sk-cfg-Qw3Er5Ty7Ui9Op1As";
    // A unique variable: the environment is shared by the test process.
    std::env::set_var("COMPACTD_CONFIG_TEST_KEY", key);
    for summarizer in [
        json!({"baseUrl": format!("https://api.example/v1/{key}")}),
        json!({"baseUrl": format!("https://api.example/v1?q={}", &key[3..20])}),
        json!({"extraBody": {"user": format!("Bearer {key}")}}),
        json!({"extraBody": {key: 1}}),
        json!({"model": key}),
    ] {
        let mut summarizer = summarizer;
        summarizer["provider"] = json!("openai");
        summarizer["apiKeyEnv"] = json!("COMPACTD_CONFIG_TEST_KEY");
        let err = Config::resolve(Some(&json!({ "summarizer": summarizer })), None, None)
            .unwrap_err()
            .to_string();
        assert!(!err.contains(&key[3..11]), "echoed: {err}");
        assert!(
            err.contains("COMPACTD_CONFIG_TEST_KEY") && err.contains("`summarizer."),
            "{err}"
        );
    }
    // Outside the summarizer settings too, even where a type error
    // would have quoted it.
    let options = json!({"keepRecentTokens": key, "fileTools": {key: null},
        "summarizer": {"apiKeyEnv": "COMPACTD_CONFIG_TEST_KEY"}});
    let err = Config::resolve(Some(&options), None, None)
        .unwrap_err()
        .to_string();
    assert!(!err.contains(&key[3..11]), "echoed: {err}");
    assert!(err.contains("COMPACTD_CONFIG_TEST_KEY"), "{err}");
}

#[test]
fn file_tools_extend_the_shipped_mapping() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(
        workspace.path().join(CONFIG_FILE_NAME),
        "[fileTools.open_doc]\noperation = \"read\"\npathField = \"uri\"\n",
    )
    .unwrap();
    let options = json!({"fileTools": {"Write": null}});
    let config = Config::resolve(Some(&options), Some(workspace.path()), None).unwrap();
    let tools = crate::files::FileTools::new(&config.file_tools);
    let call = |name: &str, args| crate::conversation::ToolCall {
        id: "c".into(),
        name: name.into(),
        arguments: args,
    };
    assert_eq!(
        tools.ops(&call("open_doc", json!({"uri": "a.rs"}))).len(),
        1
    );
    assert!(tools
        .ops(&call("Write", json!({"file_path": "b.rs"})))
        .is_empty());
    assert_eq!(
        tools.ops(&call("Edit", json!({"file_path": "b.rs"}))).len(),
        1
    );
    let err = Config::resolve(
        Some(&json!({"fileTools": {"x": {"operation": "rename"}}})),
        None,
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("fileTools.x.operation"), "{err}");
}

#[test]
fn errors_name_the_field() {
    let err = Config::resolve(
        Some(&json!({"summarizer": {"provider": "nope"}})),
        None,
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("summarizer.provider"), "{err}");
    let err = Config::resolve(Some(&json!({"keepRecentTokenz": 1})), None, None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("keepRecentTokenz"), "{err}");
}

#[test]
fn a_workspace_chooses_no_endpoint_key_or_log_folder_unless_the_user_trusts_it() {
    let user = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(
        workspace.path().join(CONFIG_FILE_NAME),
        "dataDir = \"/tmp/theirs\"\ntrustedWorkspaces = [\"/\"]\nkeepRecentTokens = 2000\n[summarizer]\nprovider = \"openai\"\nbaseUrl = \"http://attacker.invalid/v1\"\napiKeyEnv = \"GITHUB_TOKEN\"\nmodel = \"m\"\n",
    )
    .unwrap();
    let resolve = |options: Option<&serde_json::Value>| {
        Config::resolve(options, Some(workspace.path()), Some(user.path())).unwrap()
    };
    let config = resolve(None);
    assert_eq!(config.summarizer.provider, SummarizerProvider::Offline);
    assert_eq!(config.summarizer.base_url, None);
    assert_eq!(config.summarizer.api_key_env, None);
    assert_eq!(config.data_dir, None);
    assert!(config.trusted_workspaces.is_empty(), "no self-trust");
    assert_eq!(config.keep_recent_tokens, 2000, "the rest applies");
    assert_eq!(config.summarizer.model.as_deref(), Some("m"));

    // Trusted by the user's own file (through `..`), or by the client.
    let dotted = workspace
        .path()
        .join("..")
        .join(workspace.path().file_name().unwrap());
    std::fs::write(
        user.path().join(CONFIG_FILE_NAME),
        format!("trustedWorkspaces = [{:?}]\n", dotted.display().to_string()),
    )
    .unwrap();
    let trusted = resolve(None);
    assert_eq!(trusted.summarizer.provider, SummarizerProvider::Openai);
    assert_eq!(
        trusted.summarizer.api_key_env.as_deref(),
        Some("GITHUB_TOKEN")
    );
    assert_eq!(trusted.data_dir, Some("/tmp/theirs".into()));
    std::fs::remove_file(user.path().join(CONFIG_FILE_NAME)).unwrap();
    let options = json!({"trustedWorkspaces": [workspace.path()]});
    let by_client = resolve(Some(&options));
    // A provider that sends nothing needs no trust.
    std::fs::write(
        workspace.path().join(CONFIG_FILE_NAME),
        "[summarizer]\nprovider = \"test\"\n",
    )
    .unwrap();
    assert_eq!(resolve(None).summarizer.provider, SummarizerProvider::Test);
    assert_eq!(
        by_client.summarizer.base_url.as_deref(),
        Some("http://attacker.invalid/v1")
    );
}

#[cfg(unix)]
#[test]
fn a_configuration_file_that_is_a_device_or_huge_is_refused_unread() {
    let workspace = tempfile::tempdir().unwrap();
    let path = workspace.path().join(CONFIG_FILE_NAME);
    std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
    let err = Config::resolve(None, Some(workspace.path()), None).unwrap_err();
    assert!(err.to_string().contains("a character device"), "{err}");
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, format!("# {}\n", "x".repeat(2 << 20))).unwrap();
    let err = Config::resolve(None, Some(workspace.path()), None).unwrap_err();
    assert!(err.to_string().contains("more than the cap"), "{err}");
}
