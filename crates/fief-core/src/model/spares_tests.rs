use super::*;

fn spares() -> Spares {
    serde_saphyr::from_str(
        "count: 3\nlabels: {plan: trial}\ncomponents:\n  - name: web\n    values: {greeting: hi, replicas: 1}\n  - name: worker\n",
    )
    .unwrap()
}

#[test]
fn a_spare_name_is_the_prefix_and_eight_dns_safe_characters() {
    let s = spares();
    let name = s.name([0, 25, 26, 35, 36, 255, 7, 100]);
    assert_eq!(name, "t-az09adh2");
    assert!(crate::model::is_dns_label(&name));
}

#[test]
fn a_spare_tenant_file_round_trips_and_says_it_is_a_spare() {
    let s = spares();
    let t = s.tenant("t-abcdefgh");
    let yaml = tenant_yaml(&t).unwrap();
    assert!(yaml.starts_with("# A spare tenant"), "{yaml}");
    assert!(yaml.contains("spare: true"), "{yaml}");
    assert!(
        !yaml.contains("state:") && !yaml.contains("cluster:"),
        "{yaml}"
    );
    let back: Tenant = serde_saphyr::from_str(&yaml).unwrap();
    assert_eq!(back, t);
}

#[test]
fn allocating_keeps_name_and_components_and_sets_owner_labels_and_values() {
    let spare = spares().tenant("t-abcdefgh");
    let mut values = BTreeMap::new();
    values.insert(
        "web".to_string(),
        serde_json::json!({"greeting": "hello acme"})
            .as_object()
            .cloned()
            .unwrap(),
    );
    let alloc = Allocation {
        owner: Owner {
            email: "ops@acme.example".into(),
            organization: "Acme".into(),
        },
        labels: [("customer".to_string(), "acme".to_string())].into(),
        values,
    };
    let t = allocate(&spare, &alloc).unwrap();
    assert!(!t.spec.spare);
    assert_eq!(t.metadata.name, "t-abcdefgh");
    assert_eq!(
        t.metadata.labels.get("plan").map(String::as_str),
        Some("trial")
    );
    assert_eq!(
        t.metadata.labels.get("customer").map(String::as_str),
        Some("acme")
    );
    assert_eq!(t.spec.owner.organization, "Acme");
    let web = &t.spec.components[0];
    assert_eq!(
        web.values.as_ref().map(|v| v.value()),
        Some(serde_json::json!({"greeting": "hello acme", "replicas": 1}))
    );
    let yaml = tenant_yaml(&t).unwrap();
    assert!(!yaml.contains("spare"), "{yaml}");
    let back: Tenant = serde_saphyr::from_str(&yaml).unwrap();
    assert_eq!(back, t);
}

#[test]
fn allocating_refuses_a_tenant_that_is_not_a_spare_and_values_for_a_component_it_lacks() {
    let spare = spares().tenant("t-abcdefgh");
    let mut customer = spare.clone();
    customer.spec.spare = false;
    assert_eq!(
        allocate(&customer, &Allocation::default()),
        Err(AllocationError::NotASpare("t-abcdefgh".into()))
    );
    let alloc = Allocation {
        values: [("db".to_string(), serde_json::Map::new())].into(),
        ..Allocation::default()
    };
    let err = allocate(&spare, &alloc).unwrap_err();
    assert!(err.to_string().contains("web, worker"), "{err}");
}
