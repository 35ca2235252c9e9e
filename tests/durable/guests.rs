//! A deploy that changes the guest, across processes: an eval saved by the old deploy (here run
//! in this test's process, on a guest whose "not a function" message differs from the committed
//! one's) is resumed by the new deploy (the `codemode` binary, with the committed guest), which
//! takes the old guest from the store and resumes the eval in it.

use codemode_host::Server;
use codemode_runtime::{Runtime, RuntimeConfig};
use codemode_test_support::{CHANGED_NOT_A_FUNCTION, NOT_A_FUNCTION, changed_guest};
use serde_json::{Value, json};

use crate::client::{self, approve_all, input_keys, request_state};
use crate::flow::GATE;
use crate::harness::{Node, await_local_parked, node_config, write_json};

/// Reads the guest's "not a function" message before and after a call a human must approve.
fn script(files: &std::path::Path) -> String {
    let path = files.join("deployed.txt").display().to_string();
    format!(
        "const message = () => {{ try {{ (void 0)(); }} catch (e) {{ return e.message; }} }};\n\
         const before = message();\n\
         await codemode.fs__write_file({{path: {path:?}, content: 'x'}});\n\
         return [before, message()];"
    )
}

/// The old deploy: a server with `wasm` as its guest, in this process, until the eval it is
/// asked to run is saved; returns the input-required result.
async fn old_deploy(config: Value, wasm: &[u8], args: &Value, records: &std::path::Path) -> Value {
    let config = codemode_policies::Config::from_json_str(&config.to_string())
        .unwrap_or_else(|e| panic!("the config: {e:?}"));
    let runtime = Runtime::with_guest(&RuntimeConfig::default(), wasm).expect("the old guest");
    let (bound, addr) = tokio::sync::oneshot::channel();
    // The builder keeps the runtime's guest in the store before it serves.
    let builder = Server::builder(config).runtime(runtime).on_bound(bound);
    let shutdown = builder.shutdown_token();
    let server = tokio::spawn(builder.serve_http("127.0.0.1:0".parse().expect("an address")));
    let url = format!("http://{}/mcp", addr.await.expect("the old deploy listens"));
    let asked = client::call_tool(&url, GATE, args, None)
        .await
        .expect("ask");
    let waited = {
        let records = records.to_path_buf();
        tokio::task::spawn_blocking(move || await_local_parked(&records, 1, "the old deploy"))
    };
    waited.await.expect("saved");
    shutdown.cancel();
    server.await.expect("join").expect("the old deploy stops");
    asked.result
}

fn message(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("UTF-8")
}

#[test]
fn an_eval_saved_by_the_old_deploy_resumes_in_the_new_process_with_its_own_guest() {
    codemode_test_support::peers::ensure_installed();
    let dir = codemode_test_support::scratch_dir("durable", "guests");
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let state = dir.join("state");
    let durable = json!({"store": "local", "dir": state, "suspendToStoreAfterSeconds": 0});
    let config = node_config(&files, &dir.join("audit"), durable);
    let config_path = dir.join("codemode.json");
    write_json(&config_path, &config);
    let args = json!({"code": script(&files)});

    let old_guest = changed_guest(Runtime::GUEST_WASM);
    let asked = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(old_deploy(
            config,
            &old_guest,
            &args,
            &state.join("records"),
        ));
    assert_eq!(input_keys(&asked).len(), 1, "{asked}");

    let node = Node::start("new", &config_path, &[]);
    let retry = client::block_on(client::call_tool(
        &node.mcp_url(),
        GATE,
        &args,
        Some((&request_state(&asked), approve_all(&asked))),
    ))
    .unwrap();
    let changed = message(CHANGED_NOT_A_FUNCTION);
    assert_eq!(
        retry.result["structuredContent"]["result"],
        json!([changed, changed]),
        "resumed in the old guest: {}\n{}",
        retry.result,
        node.log()
    );
    assert_eq!(
        std::fs::read_to_string(files.join("deployed.txt")).unwrap(),
        "x"
    );

    // A new eval on the new deploy runs its own guest.
    let fresh = client::block_on(client::call_tool(
        &node.mcp_url(),
        "eval",
        &json!({"code": "try { (void 0)(); } catch (e) { return e.message; }"}),
        None,
    ))
    .unwrap();
    assert_eq!(
        fresh.result["structuredContent"]["result"],
        json!(message(NOT_A_FUNCTION)),
        "{}",
        fresh.result
    );
}
